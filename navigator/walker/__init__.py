"""The four walker operations for one caller, without MCP's types (SPEC §3).

Nothing here imports ``mcp``, ``fastmcp``, ``navigator.mcp`` or the caller's authentication
(``tests/test_architecture.py`` asserts it): the MCP face in ``navigator.mcp`` calls in, and what
the service needs from it — renewing a caller's credential after a confirmation
(``Caller.renew``), the answer's room — is passed in. What a node answered is relayed as it is
(``navigator.nodes.connections.NodeAnswer``).

    operations    Navigator: seats, search, describe and call, reading grants on every request
    allowing      the caller's grants read now, and whether they allow the tool an address names
    calling       SPEC §3's call: schema, confirmation, the node under a deadline, a call token
    trail         the audit events of calls, confirmations and refused describes
    results       what search and describe answer of one tool: a result, a contract
    sizing        how many bytes an answer takes on the wire, and how many entries fit
    seats         walking the mesh from the top to one assignment's tools
    cursors       signed, opaque, short-lived cursors
    confirmation  confirming calls that change things
    nearby        addresses the caller may call, near one it could not use
"""
