"""The in-memory view of the mesh, and keeping it current.

Its modules:

    view             Catalog: every live tool by address, machine status, the search index
    following        keeping one navigator's view current while others change the registry
    registrar        changing the catalogue: registrations, retirements, seat placements
    upstream         reading an MCP server's ``tools/list`` when it is registered by URL
    overview         the mesh as operators see it (``/api/v1/mesh``, the console)
    registry_reads   short registry reads from the event loop
    registry_writes  whether the registry takes this navigator's writes
"""
