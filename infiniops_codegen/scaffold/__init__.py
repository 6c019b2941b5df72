"""`infiniops-codegen init`: a new project, ready to build.

Takes: a directory and a library name.
Gives: the project's files (`init`), from the templates of `templates/`.
"""
