"""The commands of ``meshnav``, one module a group (SPEC §13); ``meshnav.cli`` puts them together
under the root command, in the order ``--help`` lists them.

    local       migrate and demo: the registry made or upgraded, the whole mesh on one machine
    catalogue   register and retire: an operator changing the mesh live
    walking     mesh, search, describe, call: the walker tools in a terminal; docs, their reference
    serving       navigator serve: the MCP server agents talk to
    node_serving  node serve: the node agent on every machine
    principals  principal add, quota, list, rotate, revoke
    grants      grant allow, deny, list, revoke, check
    seats       seat place
    audit       the audit trail and its check
    contracts   held tool contracts: pending, show, approve, reject

What several commands share is declared once:

    options     the options several commands take, and how a list option or a rate is read
    reach       --navigator, --token, --database, --json: where a command's work goes
    outcome     how a command answers and ends: stdout, one line on stderr, its exit status
"""

from __future__ import annotations

__all__: list[str] = []
