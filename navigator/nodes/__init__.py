"""The outbound hop: from the navigator to a node, or to a server registered by URL.

Its modules:

    connections   one long-lived MCP client per endpoint: opened, kept, forgotten; a call's
                  deadline, and when a failed call may be sent again
    relay         one tools/call: the sessionless POST, its answer read within the limit and
                  made the navigator's to relay
    bounded       HTTP clients that read at most so much of an answer
    probes        failing fast at a node the navigator knows is not answering
    identity      which node instance answers at a node's URL (one node per machine)
    destinations  where the navigator may connect (ADR 0032)
    sdk           the private names of the pinned FastMCP, MCP SDK and httpx2 the navigator uses,
                  each behind one function, with the warning and the test that covers it
"""
