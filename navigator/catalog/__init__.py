"""The in-memory view of the mesh, and keeping it current.

Its modules:

    view             Catalog: queries over the current view; when it is loaded and caught up
    state            one view as data: machines, assignments, live tools, the search index
    records          CatalogTool and CatalogAssignment; the fingerprint cursors bind
    contracts        tool contracts held once per contract digest, decoded once per pass
    machines         a machine's record and heartbeat, and the status they make
    loading          reading the registry into a view: the whole catalogue, or one machine
    live_views       what live views are told when the catalogue changes
    following        keeping one navigator's view current while others change the registry
    registrar        changing the catalogue: registrations, retirements, seat placements,
                     operators' decisions on held contracts
    instances        one node per machine: which node instance may register it, a clean stop
    intake           what a registration takes of a tool list, each tool checked one by one
    hidden           hidden text in a contract, refused at registration (SPEC §14)
    differences      what changed between an approved contract and a held one
    upstream         reading an MCP server's ``tools/list`` when it is registered by URL
    overview         the mesh as operators see it (``/api/v1/mesh``, the console)
    registry_reads   short registry reads from the event loop
    registry_writes  whether the registry takes this navigator's writes
"""
