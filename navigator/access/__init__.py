"""Who is calling and what they may do.

Its modules:

    grants          Caller, and the one grant evaluator (SPEC §4)
    authentication  bearer tokens of stored principals, JWTs, the ASGI middleware
    binding         the one rule turning a credential into a caller: the principal row decides
    tokens          principals' stored tokens and the scopes the navigator names
    oauth           the navigator as an OAuth 2.1 resource server
    quotas          what one principal may call, and what one node is sent at once
    auditing        the audit writer: events batched into the registry off the call's path
    refusals        refused requests counted by route name, reason and address, bounded a minute
"""
