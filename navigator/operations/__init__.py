"""An operator's acts on the mesh, one function each, which the admin API (``navigator.api``) and
the web console (``navigator.console``) both call — the two faces hold no copy of their own:

    rules      principals' and grants' bodies and the rules for them (the command line's direct
               path to the registry shares them too)
    mesh_ops   machines, assignments, seats and tools: retire, refresh, place, remove, mark
    people     principals and grants: add, rotate, revoke, quota, grant, why

Each function takes the navigator's ``Services`` and what the operator asked, checked, and
writes through the registry, whose audit trail records the act as the caller's own (the face sets
``registry.audit.ACTOR`` when it checks the caller's ``mesh:admin`` scope).
"""
