"""The four walker operations for one caller, without MCP's types (SPEC §3).

Nothing here imports ``mcp``, ``fastmcp`` or ``navigator.mcp`` (``tests/test_architecture.py``
asserts it): the MCP face in ``navigator.mcp`` calls in, and what the service needs from it —
renewing a caller's credential after a confirmation, the answer's room — is passed in.

    operations    Navigator: seats, search, describe and call, reading grants on every request
    seats         walking the mesh from the top to one assignment's tools
    cursors       signed, opaque, short-lived cursors
    confirmation  confirming calls that change things
    nearby        addresses the caller may call, near one it could not use
"""
