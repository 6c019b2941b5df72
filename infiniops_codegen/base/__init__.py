"""The shared facts every stage reads, and nothing of any stage.

Takes: the tool's own files, the user's project table, the installed torch.
Gives: located errors (`errors`), YAML with positions (`yaml_nodes`,
`yaml_indentation`), where things are (`locations`), the project
(`project`), the platform and dtype tables (`platforms`, `dtypes`), the
torch build and the tested releases (`torch_build`, `torch_release`) and a
sanitized build's record (`sanitize`).

It imports no other part of the tool (tests/test_import_contract.py); the
run-time side imports `locations` and `torch_build` and nothing else of it,
so this file stays free of imports: a project's wheel copies it.
"""
