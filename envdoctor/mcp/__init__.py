"""``envdoctor mcp``: the read-only commands as tools of a Model Context Protocol server, for coding agents.

The server is an adapter over the commands' JSON documents: each tool answers with the document its command writes
with ``--format json`` (checked against that command's schema in ``envdoctor/schemas/``), made by the same functions.
It adds no knowledge and runs nothing: no tool reaches the installer's executor, ``install_plan`` only plans.

:mod:`envdoctor.mcp.tools` holds the tools and the rules every call obeys (allowed directories, redaction, one
examination of the machine at a time, a deadline and an output cap); it imports no MCP SDK, so it is tested on every
Python envdoctor supports. :mod:`envdoctor.mcp.server` puts them on the official MCP Python SDK (the ``mcp`` extra,
Python 3.10 or later) and serves them over standard input and output.
"""
