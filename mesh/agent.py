"""The node agent: serves this machine's modules, enrols with the navigator, and heartbeats.

It registers its machine and every assignment (pushing each ``tools/list``), receives the key its
call tokens are signed with, then heartbeats every interval. When the navigator forgets it (an
answer of 404 or 409) or comes back after an outage, it registers again; registering is
idempotent on the navigator's side. A module whose tool list changes is pushed again at once.

Each run is one instance of the machine's node, with an id made at its start
(``mesh.instances``) that it names on every request: one instance serves a machine at a time
(SPEC §6, ADR 0050). Told ``replaced`` — another instance took the machine over — it stops
(``InstanceReplaced``); stopped by a signal, it tells the navigator, which marks its machine not
answering at once.
"""

from __future__ import annotations

import base64
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import httpx
import uvicorn

from mesh import tracing
from mesh.calltokens import CallTokenVerifier
from mesh.digests import digest
from mesh.errors import EnrolmentFailed, InstanceReplaced
from mesh.handover import keep_secrets_from_children
from mesh.instances import INSTANCE_PATH, READY_PATH, instance_route, new_instance, ready_route
from mesh.lifecycle import Server, serve_until_stopped
from mesh.listing import listing_cause, tools_list
from mesh.modules import (
    ModuleOptions,
    ModuleSpec,
    UpstreamLimits,
    build_module,
    check_traced,
    take_libpq_secrets,
)
from mesh.modules.credentials import ModuleCredentials, check_credentials
from mesh.modules.http import upstream_refusal
from mesh.replies import check_replaced, code, said
from mesh.server import Assignment, NodeApp
from mesh.settings import NodeSettings

__all__ = ["NodeAgent", "keep_secrets_from_children", "serve_node"]

logger = logging.getLogger("meshnav.node")

#: Longest wait between two enrolment attempts while the navigator is away.
MAX_BACKOFF_S = 5.0
#: How long a module may take to list its tools (a ``stdio`` server's start included: its
#: handshake has 30 s) before the node goes on with the list it last gave. A wrapped server that
#: never answered ``tools/list`` held the registration, and every other module's, for good.
LIST_DEADLINE_S = 60.0
#: How long a node stopping waits for the navigator to take its stop (then it stops anyway, and
#: its machine is not answering three heartbeats later).
STOP_NOTICE_S = 2.0


class NodeAgent:
    def __init__(
        self,
        settings: NodeSettings,
        assignments: Sequence[Assignment],
        *,
        list_deadline_s: float = LIST_DEADLINE_S,
    ) -> None:
        self.settings = settings
        self.list_deadline_s = list_deadline_s
        #: This run's id: which instance of the machine's node this is (``mesh.instances``).
        self.instance = new_instance()
        #: Whether the navigator has taken a registration of this instance.
        self.registered = False
        self.assignments = list(assignments)
        self.key: bytes | None = None
        #: When this process first registered, on the navigators' clock (``mesh.calltokens``).
        self.registered_at: float | None = None
        self.verifier = CallTokenVerifier(
            settings.name, lambda: self.key, floor=lambda: self.registered_at
        )
        self._pushed: dict[str, str] = {}
        #: Each assignment's last tool list, for when it cannot list them (``_tools``).
        self._listed: dict[str, list[dict[str, Any]]] = {}
        #: Why an assignment cannot list its tools now, by role: the navigator shows it ``not
        #: listing`` with the cause (ADR 0057) until a list comes.
        self._not_listing: dict[str, str] = {}
        token = settings.token.get_secret_value() if settings.token else ""
        verify: ssl.SSLContext | bool | str = settings.navigator_ca or True
        self.http = httpx.AsyncClient(
            base_url=settings.navigator_url.rstrip("/") + "/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(10.0, connect=3.0),
            verify=verify,
            trust_env=False,
        )

    async def _tools(self, assignment: Assignment) -> list[dict[str, Any]] | None:
        """The assignment's tools now; when it cannot list them (a wrapped server that cannot
        start, or one that does not answer within ``list_deadline_s``), the list it last gave,
        or None before it ever gave one. An empty list would remove its tools from the mesh,
        where they should stay and answer node_unavailable."""
        try:
            with anyio.fail_after(self.list_deadline_s):
                tools = await tools_list(assignment)
        except Exception as error:  # whatever a module's server raises: it is not the node's end
            cause = listing_cause(error, upstream_refusal(assignment.server))
            last = self._listed.get(assignment.role)
            if self._not_listing.get(assignment.role) != cause:  # once a cause, not each interval
                logger.warning(
                    "assignment %s cannot list its tools (%s); %s",
                    assignment.role,
                    cause,
                    "keeping its last list" if last is not None else "not listing until it can",
                )
            self._not_listing[assignment.role] = cause
            return last
        if self._not_listing.pop(assignment.role, None) is not None:
            logger.info("assignment %s lists its tools again", assignment.role)
        self._listed[assignment.role] = tools
        return tools

    def _state(self, role: str, tools: list[dict[str, Any]]) -> str:
        """What was pushed for an assignment: its tools and why it is not listing, if it is not."""
        return digest([tools, self._not_listing.get(role)])

    async def _every_list(self) -> list[list[dict[str, Any]] | None]:
        """Every assignment's tools, asked side by side: a module slow to answer (a ``stdio``
        server starting, or hung until its handshake times out) holds the registration up once,
        not once per module before it."""
        lists: list[list[dict[str, Any]] | None] = [None] * len(self.assignments)

        async def list_one(index: int) -> None:
            lists[index] = await self._tools(self.assignments[index])

        async with anyio.create_task_group() as tasks:
            for index in range(len(self.assignments)):
                tasks.start_soon(list_one, index)
        return lists

    def _assignment_body(
        self, assignment: Assignment, tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "role": assignment.role,
            "module": assignment.spec.module,
            "kind": assignment.kind,
            "tools": tools,
        }
        if assignment.seat:
            body["seat"] = assignment.seat
        if assignment.role in self._not_listing:
            body["notListing"] = self._not_listing[assignment.role]
        return body

    async def register(self) -> None:
        listed = [  # one that never listed is registered not listing, with no tools (ADR 0057)
            (assignment, [] if tools is None else tools)
            for assignment, tools in zip(self.assignments, await self._every_list(), strict=True)
            if tools is not None or assignment.role in self._not_listing
        ]
        body = {
            "machine": self.settings.name,
            "advertise": self.settings.advertise_url,
            "heartbeatS": self.settings.heartbeat_s,
            "assignments": [self._assignment_body(a, tools) for a, tools in listed],
            "instance": self.instance,
            # a take-over is this run's start's: registering again later takes nothing over
            "replace": self.settings.replace and not self.registered,
        }
        try:
            response = await self.http.post("/nodes/register", json=body)
        except httpx.HTTPError:
            raise EnrolmentFailed("The navigator cannot be reached.", transient=True) from None
        if response.status_code >= 500:
            raise EnrolmentFailed(
                f"The navigator cannot take the registration now ({code(response)}).",
                transient=True,
            )
        if response.status_code != 200:
            raise EnrolmentFailed(
                f"The navigator refused the registration ({code(response)}){said(response)}"
            )
        try:  # whatever else answers at the navigator's URL (a proxy's page) is asked again
            answer = response.json()
            registered_at = float(answer["registeredAt"])
            key = base64.b64decode(answer["key"], validate=True)
            if len(key) < KEY_BYTES:  # the empty key would sign a call token for anyone
                raise ValueError("not a node key")
            registered = len(answer["registered"])
            refusals = [(str(r["name"]), str(r["reason"])) for r in answer.get("refused", [])]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise EnrolmentFailed(
                "The navigator's answer is not a registration.", transient=True
            ) from None
        for assignment, tools in listed:  # pushed once the navigator took them, not before
            self._pushed[assignment.role] = self._state(assignment.role, tools)
        if self.registered_at is None:  # a later registration keeps this process's memory
            self.registered_at = registered_at
        self.key = key
        self.registered = True
        for name, reason in refusals:
            logger.warning("navigator refused tool %s: %s", name, reason)
        logger.info("registered %s with %d tools", self.settings.name, registered)

    async def enrol(self) -> None:
        """Register, retrying with backoff while the navigator is away or cannot serve (its
        registry down: ``registry_unavailable``); a refusal of the node is final."""
        delay = 0.2
        while True:
            try:
                await self.register()
                return
            except EnrolmentFailed as error:
                if not error.transient:
                    raise
                logger.info("%s Retrying in %.1fs", error, delay)
                await anyio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF_S)

    async def heartbeat(self) -> None:
        path = f"/nodes/{self.settings.name}/heartbeat"
        try:
            response = await self.http.post(path, json={"instance": self.instance})
        except httpx.HTTPError:
            logger.info("heartbeat failed: navigator not reachable")
            return
        check_replaced(response)
        if response.status_code in (404, 409):
            await self.enrol()
        elif response.status_code != 200:
            logger.warning("heartbeat refused (%s)", code(response))

    async def push_changes(self) -> None:
        """Push an assignment again when its tool list changed; a push the navigator did not
        take (refused, or not reached) is tried again at the next interval."""
        for assignment in self.assignments:
            tools = await self._tools(assignment)
            if tools is None and assignment.role not in self._not_listing:
                continue
            tools = [] if tools is None else tools
            state = self._state(assignment.role, tools)
            if state == self._pushed.get(assignment.role):
                continue
            body = {
                "advertise": self.settings.advertise_url,
                "assignment": self._assignment_body(assignment, tools),
                "instance": self.instance,
            }
            response = await self.http.put(
                f"/nodes/{self.settings.name}/assignments/{assignment.role}", json=body
            )
            check_replaced(response)
            if response.status_code != 200:
                logger.warning("tool list push refused (%s)", code(response))
            else:
                self._pushed[assignment.role] = state
                logger.info("pushed the changed tool list of %s", assignment.role)

    async def run(self) -> None:
        """Enrol, then heartbeat and watch the tool lists side by side, each every interval: a
        module slow to list its tools must not hold the heartbeats up, or the navigator would
        mark the whole machine not answering while its other modules serve. Told ``replaced``,
        it ends with ``InstanceReplaced``; stopped otherwise, it tells the navigator first."""
        replaced: InstanceReplaced | None = None
        try:
            await self.enrol()
            async with anyio.create_task_group() as tasks:

                async def every_interval(step: Callable[[], Awaitable[None]]) -> None:
                    nonlocal replaced
                    try:
                        await self._every_interval(step)
                    except InstanceReplaced as error:
                        replaced = error
                        tasks.cancel_scope.cancel()

                tasks.start_soon(every_interval, self.heartbeat)
                tasks.start_soon(every_interval, self._push_changes_or_log)
        finally:
            if replaced is None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_NOTICE_S):
                    await self.stop_notice()
        if replaced is not None:
            logger.error("%s", replaced)
            raise replaced

    async def stop_notice(self) -> None:
        """Tell the navigator this instance stops, so that its machine is not answering at once
        rather than three heartbeats later; a navigator away is not waited for."""
        if not self.registered:
            return
        try:
            response = await self.http.post(
                f"/nodes/{self.settings.name}/stop", json={"instance": self.instance}
            )
        except httpx.HTTPError:
            logger.info("stop not told: navigator not reachable")
            return
        if response.status_code == 200:
            logger.info("told the navigator that %s stops", self.settings.name)

    async def _every_interval(self, step: Callable[[], Awaitable[None]]) -> None:
        while True:
            await anyio.sleep(self.settings.heartbeat_s)
            await step()

    async def _push_changes_or_log(self) -> None:
        try:
            await self.push_changes()
        except httpx.HTTPError:
            logger.info("tool list push failed: navigator not reachable")


#: The shortest call-token key a node takes: the navigator's are 32 bytes (``NODE_KEY_BYTES``).
KEY_BYTES = 32


async def serve_node(
    settings: NodeSettings,
    specs: Sequence[ModuleSpec],
    seats: Sequence[tuple[str, ModuleSpec]] = (),
    server_socket: socket.socket | None = None,
    credentials: Mapping[str, ModuleCredentials] | None = None,
    libpq_secrets: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Serve the modules and run the agent until cancelled; on ``server_socket`` when the caller
    bound it already (the command line does, to report a port in use in one line).
    ``credentials``: each role's upstream credentials, and ``libpq_secrets`` the postgres
    modules', read from the node's environment and files at start (``read_credentials``,
    ``take_libpq_secrets``); ``environ``: the environment it started with, secrets included
    (``mesh.handover``), for tracing's settings."""
    credentials = credentials or {}
    if any(spec.module in ("http", "stdio") for spec in specs):
        from mesh.modules.upstream import withhold_library_words

        withhold_library_words()  # what they log of an upstream's failure holds its words
    served = {spec.role: spec.module for spec in specs}
    check_credentials(credentials, served)
    check_traced(settings.module_trace, served)
    for role, given in credentials.items():  # where each secret came from, never its value
        for source in given.sources:
            logger.info("module %s: %s", role, source)
    options = ModuleOptions(
        allow_privileged_role=settings.allow_privileged_role,
        libpq_secrets=take_libpq_secrets() if libpq_secrets is None else libpq_secrets,
        credentials=credentials,
        upstream=UpstreamLimits(
            answer_bytes=settings.upstream_answer_bytes,
            error_log_s=settings.upstream_error_log_s,
            traced=frozenset(settings.module_trace),
        ),
    )
    assignments = [Assignment(spec, build_module(spec, options)) for spec in specs]
    assignments += [
        Assignment(spec, build_module(spec, options), seat=seat) for seat, spec in seats
    ]
    agent = NodeAgent(settings, assignments)
    app = NodeApp(
        assignments,
        agent.verifier,
        {
            INSTANCE_PATH: instance_route(agent.instance),
            READY_PATH: ready_route(lambda: agent.registered),
        },
        advertise_url=settings.advertise_url,
    )
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        log_config=None,  # its records go to the process's one handler (meshnav.logs)
        lifespan="on",
        ssl_certfile=settings.tls_cert,
        ssl_keyfile=settings.tls_key,
    )
    tracing.configure("meshnav-node", environ)  # on only with an OTLP endpoint set (ADR 0040)
    try:
        sockets = None if server_socket is None else [server_socket]
        await serve_until_stopped(Server(config, settings.connection_limits()), sockets, agent.run)
    finally:
        with anyio.CancelScope(shield=True):
            await agent.http.aclose()
        tracing.stop()
