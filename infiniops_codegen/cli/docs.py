"""`infiniops-codegen docs`: the documentation shipped with the tool."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import EXIT_USAGE, error
from .options import VERBOSE_OPTION


def _doc_topics() -> dict[str, Path]:
    """topic -> file of the shipped docs (locations.DOCS_DIR): adding-an-op,
    design/bridge-cache, ..."""
    from ..base.locations import DOCS_DIR

    files = sorted(DOCS_DIR.glob("*.md")) + sorted(
        p for p in DOCS_DIR.glob("*/**/*.md")
    )
    return {p.relative_to(DOCS_DIR).with_suffix("").as_posix(): p for p in files}


@click.command()
@click.argument("topic", required=False)
@click.option(
    "--path", "show_path", is_flag=True, help="Print the topic's file, not its text."
)
@VERBOSE_OPTION
def docs(topic: str | None, show_path: bool):
    """The tool's documentation, shipped with it.

    \b
    With no TOPIC: the topics and their titles. With one: its text (Markdown).
    Examples:
      infiniops-codegen docs
      infiniops-codegen docs adding-an-op
      infiniops-codegen docs packaging --path
    """
    topics = _doc_topics()
    if topic is None:
        width = max(map(len, topics))
        for name, path in topics.items():
            title = next(
                (
                    line[2:].strip()
                    for line in path.read_text(encoding="utf-8").splitlines()
                    if line.startswith("# ")
                ),
                "",
            )
            click.echo(f"{name:<{width}}  {title}")
        return
    key = topic.removeprefix("docs/").removesuffix(".md")
    if key not in topics:
        import difflib

        close = difflib.get_close_matches(key, list(topics), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        error(f"no topic {topic!r}{hint} ('infiniops-codegen docs' lists them)")
        sys.exit(EXIT_USAGE)
    path = topics[key]
    click.echo(
        str(path) if show_path else path.read_text(encoding="utf-8"), nl=show_path
    )
