"""The outbound hop: from the navigator to a node, or to a server registered by URL.

Its modules:

    connections   one long-lived MCP client per endpoint, deadlines, the node-call POST
    bounded       HTTP clients that read at most so much of an answer
    probes        failing fast at a node the navigator knows is not answering
    destinations  where the navigator may connect (ADR 0032)
"""
