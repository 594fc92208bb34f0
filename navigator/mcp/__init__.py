"""What agents speak to: the MCP server and everything that knows MCP's types.

The walker operations themselves are ``navigator.walker``'s, which knows none of them: this
package makes them MCP tools, and their results MCP answers. Its modules:

    server       the FastMCP server: the four walker tools, ``mesh.tools.discover``, running
    tools        the walker tools' definitions: arguments, output schemas, descriptions
    middleware   who is calling, per request, and errors turned into SPEC §9 answers
    answers      walker answers on the wire: structured content and text (sized by the walker)
    discover     ``mesh.tools.discover``: search as a JSON-RPC method of its own
    elicitation  asking the person behind the client, in either protocol era
    sessions     the legacy era's sessions, capped and closed per principal
    early        a call its caller's quota refuses, answered before the MCP app
    stopping     the drain once the navigator is told to stop
"""
