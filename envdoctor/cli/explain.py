"""``envdoctor explain``."""

from __future__ import annotations

from typing import Optional

import click

from . import EXIT_USAGE, fail
from .common import format_option


@click.command("explain", epilog="""\b
Examples:
  envdoctor explain                       # list every finding code
  envdoctor explain driver.too_old_for_framework
\b
Exit codes: 0 explained; 2 unknown code.""")
@click.argument("code", required=False)
@format_option("text", "json", help_text="Output format: text, or json (the code's documentation as an object; "
                                          "every code's as a list without CODE).")
def explain(code: Optional[str], fmt: str) -> None:
    """Explain a finding CODE: what the check looks at, why it matters, where the rule comes from."""
    import difflib
    import json

    from ..catalog import code_docs

    docs = code_docs()
    if not code:
        if fmt == "json":
            click.echo(json.dumps([d.to_dict() for d in sorted(docs.values(), key=lambda d: d.code)], indent=2))
            return
        width = max(len(c) for c in docs)
        for c in sorted(docs):
            click.echo("%s  %-7s  %s" % (c.ljust(width), docs[c].severity, docs[c].summary))
        return
    doc = docs.get(code)
    if doc is None:
        close = difflib.get_close_matches(code, list(docs), n=3)
        hint = (" Did you mean: %s?" % ", ".join(close)) if close else " `envdoctor explain` lists them all."
        raise fail("unknown finding code %r.%s" % (code, hint), EXIT_USAGE)
    if fmt == "json":
        click.echo(json.dumps(doc.to_dict(), indent=2))
        return
    click.echo("%s  (%s)\n\n%s\n\nWhat it looks at: %s\n\nWhy it matters: %s" % (
        doc.code, doc.severity, doc.summary, doc.looks_at, doc.why))
    if doc.source:
        click.echo("\nRule source: %s" % doc.source)
    if doc.messages:
        click.echo("\nError messages it explains:")
        for m in doc.messages:
            click.echo("  %s\n    (%s)" % (m.text, m.source))
