"""neutrino-server: configuration -> database -> plugins -> API, served by uvicorn."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import signal
import socket
import sys
from collections.abc import Iterable
from multiprocessing.context import SpawnProcess
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from neutrino import cli, config, log, metrics
from neutrino.agents.commands import agent_commands
from neutrino.api import keystone, policy, topology
from neutrino.api.agent_scheduler import AgentSchedulerController
from neutrino.api.app import ApiApp
from neutrino.api.auth import make_authenticator
from neutrino.api.auto_allocate import AutoAllocatedTopologyController
from neutrino.api.controller import ResourceController
from neutrino.api.extensions import ExtensionError, api_resources, claimed
from neutrino.api.metrics import GROUP as METRICS_GROUP
from neutrino.api.metrics import PAGE as METRICS_PAGE
from neutrino.api.metrics import MetricsPage, RequestMetrics
from neutrino.api.octavia import OctaviaRouter, neutron_fault
from neutrino.api.openapi import DocumentBuilder, OpenApiController
from neutrino.api.quotas import QuotasController
from neutrino.api.router import PathController, Router
from neutrino.api.tags import TagsController
from neutrino.cmd.startup import StartupError, listen, reach_bus, serve
from neutrino.cmd.workers import Workers
from neutrino.context import Context
from neutrino.db.engine import Database
from neutrino.db.quota import QuotaEngine
from neutrino.definitions import EXTENSIONS, auto_allocated_topology
from neutrino.plugins import loader
from neutrino.plugins.base import Environment
from neutrino.plugins.hooks import Hooks
from neutrino.plugins.periodic import PeriodicTasks
from neutrino.plugins.providers import GROUP as PROVIDERS_GROUP
from neutrino.plugins.providers import ServiceProviders
from neutrino.plugins.quotas import QuotaService
from neutrino.plugins.tagging import TagService
from neutrino.rpc.bus import Bus
from neutrino.rpc.service import RpcService
from neutrino.rpc.transport import TransportURLError, get_transport
from neutrino.services.octavia.plugin import OctaviaPlugin
from neutrino.services.servicetype import ServiceTypePlugin

LOG = logging.getLogger("neutrino.server")
CONFIG_ENV = config.CONFIG_ENV
#: the program's name and the logging options of its command line, for its workers
LOG_ENV = "NEUTRINO_LOG_OPTIONS"
PROGRAM = "neutrino-server"
#: ``client_socket_timeout = 0``: uvicorn's idle timeout wants a number (68 years)
FOREVER = 2**31
DESCRIPTION = ("Serve the OpenStack Networking API v2.0, and the agents' calls on the "
               "message bus, as the config files say.")


def load_config(files: list[str]) -> config.Config:
    conf = config.load(files)
    classes = []
    for option, group, names in (
            ("core_plugin", loader.CORE_GROUP, [conf.DEFAULT.core_plugin]),
            ("service_plugins", loader.SERVICE_GROUP, conf.DEFAULT.service_plugins)):
        for name in names:
            try:
                classes.append(loader.find(group, name))
            except loader.PluginLoadError as error:
                raise config.ConfigError(
                    f"{error}, set by {conf.source('DEFAULT', option)}") from None
    classes[1:1] = companion_classes(classes[0])
    conf.register([keystone.GROUP, policy.GROUP, topology.GROUP, METRICS_GROUP,
                   PROVIDERS_GROUP])
    ServiceProviders.from_config(conf)  # every entry checked, its driver loaded, now
    for cls in classes:  # found by name, so not known to be a Plugin (as below)
        conf.register(getattr(cls, "option_groups", ()))
    return conf


def companion_classes(core: type) -> list[type]:
    """The service plugins the core plugin names in ``companion_plugins``, found by
    entry point like any other (built after it, before the configured ones)."""
    found = []
    for name in getattr(core, "companion_plugins", ()):
        try:
            found.append(loader.find(loader.SERVICE_GROUP, name))
        except loader.PluginLoadError as error:
            raise config.ConfigError(f"{error}, named by the core plugin "
                                     f"{core.__name__}; is the package installed?") from None
    return found


def build_app(conf: config.Config, sync: bool = False, serve_rpc: bool = True) -> ApiApp:
    """The API for ``conf``; ``sync`` also brings plugin tables in line (once, at start).

    ``serve_rpc``: the process serves the agents' topics and runs the periodic
    tasks; otherwise its bus only sends (rpc workers serve)."""
    rules = policy.load(conf)
    try:
        authenticator = make_authenticator(conf.DEFAULT.auth_strategy, conf, rules)
    except ValueError as error:
        raise config.ConfigError(
            f"{error}, set by {conf.source('DEFAULT', 'auth_strategy')}") from None
    db = Database(config.database_url(conf), conf.database.max_retries)
    try:
        transport = get_transport(conf.DEFAULT.transport_url)
    except TransportURLError as error:
        raise config.ConfigError(
            f"{error}, set by {conf.source('DEFAULT', 'transport_url')}") from None
    bus = Bus(transport, timeout=conf.DEFAULT.rpc_response_timeout)
    env = Environment(conf=conf, db=db, hooks=Hooks(), quota=QuotaEngine(conf.quotas), bus=bus,
                      providers=ServiceProviders.from_config(conf))
    core_class = loader.find(loader.CORE_GROUP, conf.DEFAULT.core_plugin)
    service_classes = [*companion_classes(core_class),
                       *(loader.find(loader.SERVICE_GROUP, name)
                         for name in conf.DEFAULT.service_plugins)]
    env.plugin_types = frozenset(
        kind for cls in (core_class, *service_classes)
        if (kind := getattr(cls, "plugin_type", None)) is not None)
    core = core_class(env)
    env.core = core
    services = [cls(env) for cls in service_classes]
    plugins = [plugin for top in (core, *services)
               for plugin in (top, *getattr(top, "companions", []))]
    plugins.append(ServiceTypePlugin(env))  # /v2.0/service-providers, always (as Neutron)
    try:
        owners = claimed(plugins)
    except ExtensionError as error:  # what the loaded plugins serve, or lack
        raise ExtensionError(f"{error}, set by {conf.source('DEFAULT', 'service_plugins')}"
                             ) from None
    max_limit = int(conf.DEFAULT.pagination_max_limit)
    admin = Context.admin()
    served = api_resources(core, owners)
    env.routers = owners.get("router")
    env.resources.update((path, resource) for path, (resource, _) in served.items())

    def parent_lookup(resource: Any) -> Any:
        if resource.parent is None:
            return None
        collection, member = resource.parent
        return getattr(served[collection][1], f"get_{member}")

    controllers = {
        path: ResourceController(resource, plugin, rules,
                                 max_limit if max_limit > 0 else None,
                                 lambda network_id: core.get_network(admin, network_id),
                                 parent_lookup(resource))
        for path, (resource, plugin) in served.items()}
    tables = {}
    for plugin in plugins:
        tables.update(plugin.taggable_tables())
    tags = TagsController(TagService(db, tables), rules) if "standard-attr-tag" in owners else None
    quotas = QuotasController(QuotaService(db, env.quota), rules) if "quotas" in owners else None
    extensions = [EXTENSIONS[alias] for alias in owners]
    paths: dict[str, PathController] = {}
    if auto_allocated_topology.ALIAS in owners:
        paths[auto_allocated_topology.PATH] = AutoAllocatedTopologyController(
            owners[auto_allocated_topology.ALIAS], rules)
    paths["openapi"] = OpenApiController(
        lambda: DocumentBuilder(router, conf.DEFAULT.auth_strategy).build())
    pages: dict[str, PathController] = {}
    if conf.DEFAULT.enable_topology_page:
        pages[topology.PAGE] = topology.TopologyPage()
    if conf.DEFAULT.enable_metrics:
        pages[METRICS_PAGE] = MetricsPage(rules)
    router = Router(controllers, extensions, tags, quotas,
                    AgentSchedulerController(owners, rules), paths, pages)
    endpoints: dict[str, list[Any]] = {}
    periodic = []
    for plugin in plugins:
        if sync:
            plugin.sync_database()
        plugin.start()
        for topic, objects in plugin.rpc_endpoints().items():
            endpoints.setdefault(topic, []).extend(objects)
        periodic.extend(plugin.periodic_tasks())
    # The topic queues share the agents' calls out between the processes that
    # serve them (and between servers).
    if not serve_rpc:
        endpoints, periodic = {}, []
    rpc = RpcService(bus, endpoints, config.host_name(conf))
    threads = conf.DEFAULT.wsgi_default_pool_size or default_pool_size(db)
    # The load-balancer API: its own app, answering on its own socket
    others = {}
    for plugin in plugins:
        if isinstance(plugin, OctaviaPlugin):
            others[conf.api_settings.bind_port] = ApiApp(
                OctaviaRouter(plugin, max_limit if max_limit > 0 else None), authenticator,
                keep_alive=conf.DEFAULT.wsgi_keep_alive, threads=threads,
                errors=neutron_fault)
    def shutdown() -> None:
        for plugin in plugins:
            plugin.stop()
        db.dispose()

    return ApiApp(router, authenticator, on_shutdown=shutdown,
                  metrics=RequestMetrics(router) if conf.DEFAULT.enable_metrics else None,
                  background=[rpc, PeriodicTasks(periodic)],
                  keep_alive=conf.DEFAULT.wsgi_keep_alive, threads=threads, by_port=others,
                  # the versions document, and the page's files (its data asks)
                  public=lambda path: not path.strip("/") or (
                      topology.PAGE in pages and topology.is_page(path)))


def serves_octavia(conf: config.Config) -> bool:
    """Whether the load-balancer API is served beside the Networking API."""
    return any(loader.find(loader.SERVICE_GROUP, name) is OctaviaPlugin
               for name in conf.DEFAULT.service_plugins)


def worker_app() -> ApiApp:
    """Entry for each API worker process (api_workers > 1)."""
    files = json.loads(os.environ.get(CONFIG_ENV, "[]"))
    conf = load_config(files)
    _logging(conf)
    return build_app(conf, serve_rpc=conf.DEFAULT.rpc_workers == 0)


def rpc_worker(files: list[str], parent: int) -> None:
    """Entry for each rpc worker process: the agents' topics and the periodic
    tasks, no HTTP; until SIGTERM, or until the server process is gone (uvicorn
    ends it with the signal it caught, before any clean-up of ours could run)."""
    conf = load_config(files)
    _logging(conf)
    app = build_app(conf)

    async def orphaned(stop: asyncio.Event) -> None:
        while os.getppid() == parent:
            await asyncio.sleep(1)
        stop.set()

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        watch = asyncio.create_task(orphaned(stop))
        for service in app.background:
            await service.start()
        await stop.wait()
        watch.cancel()
        for service in reversed(app.background):
            await service.stop()

    asyncio.run(serve())
    app.on_shutdown()


def start_rpc_workers(count: int, files: list[str]) -> list[SpawnProcess]:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=rpc_worker, args=(files, os.getpid()),
                               name=f"rpc-worker-{n}") for n in range(count)]
    for worker in workers:
        worker.start()
    return workers


def stop_rpc_workers(workers: list[SpawnProcess]) -> None:
    for worker in workers:
        worker.terminate()  # SIGTERM: a graceful stop
    for worker in workers:
        worker.join(10)
        if worker.is_alive():
            worker.kill()


def _logging(conf: config.Config) -> None:
    """Logging as ``conf`` and the command line (``LOG_ENV``, which workers inherit) say."""
    given = json.loads(os.environ.get(LOG_ENV) or "{}")
    program = given.pop("program", PROGRAM)
    try:
        log.setup(conf, program, given)
    except config.ConfigError as error:
        raise StartupError(str(error)) from None


def pass_logging_options(program: str, args: argparse.Namespace) -> None:
    """The command line's logging options, for ``_logging`` here and in the workers."""
    os.environ[LOG_ENV] = json.dumps({"program": program, **cli.logging_overrides(args)})


def check(files: list[str], extra_groups: Iterable[config.OptGroup] = ()) -> config.Config:
    """Everything that can fail at start, before any work, each one line
    (``StartupError``): the configuration (values; plugins and their drivers,
    auth, policy and the transport URL, by building the API without starting
    it, which touches no database), ``state_path`` and the broker. Unknown
    options are warned of once ``extra_groups`` (the all-in-one's agents')
    are registered too, or the options in use would be called unknown."""
    try:
        conf = load_config(files)
        conf.register(extra_groups)
    except (config.ConfigError, loader.PluginLoadError) as error:
        raise StartupError(str(error)) from None
    _logging(conf)
    conf.warn_unknown(agent_commands)
    if conf.DEFAULT.rpc_workers and conf.DEFAULT.transport_url.startswith("memory:"):
        raise StartupError(f"rpc_workers = {conf.DEFAULT.rpc_workers} needs a message broker "
                           "(transport_url = rabbit://...): memory:// reaches only its own "
                           f"process, set by {conf.source('DEFAULT', 'transport_url')}")
    try:
        config.database_url(conf)  # state_path, made if need be
        build_app(conf).on_shutdown()
    except (ExtensionError, loader.PluginLoadError, config.ConfigError) as error:
        raise StartupError(str(error)) from None
    except (SQLAlchemyError, ImportError) as error:  # a URL no engine can be made of
        raise _database_error(conf, error) from None
    reach_bus(conf)
    return conf


def _database_error(conf: config.Config, error: Exception) -> StartupError:
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return StartupError(f"cannot use the database of "
                        f"{conf.source('database', 'connection')}: {reason}")


def set_up_database(conf: config.Config) -> None:
    """The schema at head, then the plugins' own rows in line with the configuration."""
    from neutrino.db import migrate  # alembic: only the process that migrates

    try:
        migrate.upgrade(config.database_url(conf))
    except (SQLAlchemyError, ImportError) as error:  # ImportError: a missing DB driver
        raise _database_error(conf, error) from None
    try:
        build_app(conf, sync=True).on_shutdown()
    except (ExtensionError, loader.PluginLoadError, config.ConfigError) as error:
        raise StartupError(str(error)) from None


def api_sockets(conf: config.Config, reuse_port: bool = False) -> list[socket.socket]:
    """The Networking API's listening sockets, and the load-balancer API's
    when it is served (a port in use is a StartupError, nothing left open);
    ``reuse_port``: a worker's set, one of several on the same addresses."""
    sockets = listen(conf, reuse_port=reuse_port)
    if serves_octavia(conf):
        try:
            sockets += listen(conf, "api_settings", reuse_port)
        except StartupError:
            for sock in sockets:
                sock.close()
            raise
    return sockets


def worker_sockets(conf: config.Config, bound: list[socket.socket]
                   ) -> list[list[socket.socket]]:
    """A set of sockets for each API worker, on the addresses ``bound`` holds
    (bound without SO_REUSEPORT, so that a port another server already
    shares stopped the command); ``bound`` is closed."""
    for sock in bound:
        sock.close()
    return [api_sockets(conf, reuse_port=True) for _ in range(conf.DEFAULT.api_workers)]


def prepare(files: list[str], extra_groups: Iterable[config.OptGroup] = ()
            ) -> tuple[config.Config, list[socket.socket]]:
    """``check``, the API's sockets bound (a port in use stops the command here,
    before any work), then the database set up; the configuration and sockets."""
    conf = check(files, extra_groups)
    sockets = api_sockets(conf)
    try:
        set_up_database(conf)
    except StartupError:
        for sock in sockets:
            sock.close()
        raise
    return conf, sockets


def default_pool_size(db: Database) -> int:
    """An API worker's threads: few on SQLite, which writes one transaction at a
    time for the whole host (more threads only contend for the interpreter
    while the writer needs it), more on a database server."""
    return 2 if db.is_sqlite else 16


def uvicorn_options(conf: config.Config) -> dict[str, Any]:
    """How uvicorn serves the API, from ``[DEFAULT]``."""
    opts = conf.DEFAULT
    return {"host": opts.bind_host, "port": opts.bind_port, "access_log": False,
            "log_level": "warning", "timeout_graceful_shutdown": 5,
            "timeout_keep_alive": opts.client_socket_timeout or FOREVER,
            "log_config": None}  # uvicorn's records go to the handlers of neutrino.log


def share_metrics(files: list[str]) -> None:
    """With more than one process (API or rpc workers) a scrape must see the sum
    of all: their metrics go to a directory under ``state_path``, made empty and
    chosen before any metric exists (``neutrino.metrics``); workers inherit it."""
    try:
        conf = config.load(files, [METRICS_GROUP])
    except config.ConfigError as error:
        raise StartupError(str(error)) from None
    opts = conf.DEFAULT
    if not opts.enable_metrics or (opts.api_workers == 1 and not opts.rpc_workers):
        return
    path = os.path.join(os.path.abspath(opts.state_path), "metrics")
    try:
        metrics.use_multiprocess_directory(path)
    except OSError as error:
        raise StartupError(f"cannot create directory {path}: {error.strerror}, set by "
                           f"{conf.source('DEFAULT', 'state_path')}") from None


def main(argv: list[str] | None = None) -> None:
    args = cli.parser(PROGRAM, DESCRIPTION).parse_args(argv)
    pass_logging_options(PROGRAM, args)
    try:
        share_metrics(args.config_file)
        conf, sockets = prepare(args.config_file)
        socket_sets = worker_sockets(conf, sockets) if conf.DEFAULT.api_workers > 1 else []
    except StartupError as error:
        print(f"neutrino-server: {error}", file=sys.stderr)
        sys.exit(2)
    opts = conf.DEFAULT
    LOG.info("serving the Networking API on http://%s:%s with %d worker(s)",
             opts.bind_host, opts.bind_port, opts.api_workers)
    if serves_octavia(conf):
        LOG.info("serving the load-balancer API on http://%s:%s",
                 conf.api_settings.bind_host, conf.api_settings.bind_port)
    common = uvicorn_options(conf)
    files = [os.path.abspath(f) for f in args.config_file]
    rpc_workers = start_rpc_workers(opts.rpc_workers, files)
    if rpc_workers:
        LOG.info("serving the agents' calls in %d rpc worker(s)", len(rpc_workers))
    try:
        workers = None
        if socket_sets:  # this process is the first worker
            os.environ[CONFIG_ENV] = json.dumps(files)
            sockets = socket_sets[0]
            workers = Workers("neutrino.cmd.server:worker_app", socket_sets[1:], common)
        serve(build_app(conf, serve_rpc=not rpc_workers), sockets, workers, **common)
    finally:
        stop_rpc_workers(rpc_workers)


if __name__ == "__main__":
    main()
