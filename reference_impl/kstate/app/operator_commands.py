"""The operator's commands: ``kstate demo``, ``kstate broker start|stop|status`` and ``kstate instance run``
(issue 34). The broker is the one the system tests start (:mod:`kstate.kafka.broker_service`), the application the
one they run (:mod:`kstate.app.demo`)."""

from __future__ import annotations

import argparse
import shlex
import time
from pathlib import Path

from rich.markup import escape

from kstate.codecs.store_types import STORE_TYPES, StoreType
from kstate.errors import KStateError
from kstate.terminal import console, err_console

DEMO_DIR = Path("kstate-demo")
DEFAULT_STORE_TYPES = ("timestamped_kv",)


def _built_types() -> list[str]:
    return [t.value for t, info in STORE_TYPES.items() if info.built]


def _say(text: str) -> None:
    err_console.print(escape(text), highlight=False, soft_wrap=True)


def cmd_broker(args: argparse.Namespace) -> int:
    """Start, stop or show the kit's broker (Apache Kafka where Java is installed, else Tansu; on 127.0.0.1)."""
    from kstate.kafka import broker_service

    directory = Path(args.dir)
    if args.action == "start":
        _say(f"starting the broker from {directory} (the first start resolves the broker's jars with Maven) ...")
        found = broker_service.start(directory, provider=args.provider)
        console.print(found.bootstrap, highlight=False)
        _say(f"running: {found.describe()}; stop it with: kstate broker stop --dir {shlex.quote(str(directory))}")
        return 0
    if args.action == "stop":
        stopped = broker_service.stop(directory)
        _say(f"stopped: {stopped.describe()}" if stopped else f"no broker running from {directory}")
        return 0
    current = broker_service.running(directory)
    if current is None:
        _say(f"no broker running from {directory}")
        return 1
    console.print(current.bootstrap, highlight=False)
    _say(f"running: {current.describe()}")
    return 0


def _bootstrap(args: argparse.Namespace) -> str:
    from kstate.kafka import broker_service

    if args.bootstrap:
        return str(args.bootstrap)
    found = broker_service.running(Path(args.broker_dir))
    if found is None:
        raise KStateError(f"no --bootstrap and no broker running from {args.broker_dir} (start one: kstate broker "
                          "start)")
    return found.bootstrap


def _store(text: str) -> tuple[str, StoreType]:
    name, _, kind = text.partition(":")
    if not name or not kind:
        raise KStateError(f"--store {text!r}: expected NAME:TYPE, for example counts:timestamped_kv")
    return name, StoreType.parse(kind)


def cmd_instance_run(args: argparse.Namespace) -> int:
    """Run an application instance: create its topics, feed it input, run it until it committed all of it, stop it
    cleanly; the state directory stays for kstate inspect and kstate audit."""
    from kstate.app.demo import instance_command, run_application
    from kstate.kafka.broker import ExternalBroker, ensure_reachable

    store_name, store_type = _store(args.store)
    broker = ExternalBroker(_bootstrap(args))
    ensure_reachable(broker)
    command = instance_command(args.instance, args.kafka_version)
    state_dir = Path(args.state_dir).resolve()
    _say(f"running {command.name} ({store_type.value} store {store_name!r}) on {broker.bootstrap} ...")
    ran = run_application(broker, Path(args.work_dir).resolve() / args.application_id,
                          application_id=args.application_id, store_name=store_name, store_type=store_type,
                          state_dir=state_dir, command=command, partitions=args.partitions, records=args.records)
    _say(f"{ran.application_id}: {ran.input_records} input records processed by {ran.implementation}, stopped "
         f"cleanly; changelog {ran.changelog_topic}; state in {ran.state_dir}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Bring up the broker, a Kafka Streams application per store type with some traffic and a state directory,
    then print the kstate inspect and kstate audit commands to run on it."""
    from kstate.app.demo import (
        demo_application_id,
        follow_up_commands,
        instance_command,
        run_application,
    )
    from kstate.app.kafka_streams import InstanceUnavailable
    from kstate.kafka import broker_service
    from kstate.kafka.broker import ExternalBroker, ensure_reachable

    started = time.monotonic()
    root = Path(args.dir).resolve()
    store_types = [StoreType.parse(t) for t in (args.store_type or DEFAULT_STORE_TYPES)]
    service_dir: Path | None = None
    if args.bootstrap:
        bootstrap = str(args.bootstrap)
    else:
        service_dir = root / "broker"
        _say(f"starting the broker ({service_dir}; the first start resolves its jars with Maven) ...")
        found = broker_service.start(service_dir, provider=args.provider)
        bootstrap = found.bootstrap
        _say(f"broker: {found.describe()}")
    broker = ExternalBroker(bootstrap)
    ensure_reachable(broker)
    try:
        command = instance_command(args.instance, args.kafka_version)
    except InstanceUnavailable as exc:
        if args.instance != "kafka-streams":
            raise
        _say(f"note: {exc}; running the kit's reference instance instead")
        command = instance_command("reference")
    state_dir = root / "state"
    ran = []
    for store_type in store_types:
        application_id = demo_application_id(store_type)
        _say(f"{application_id}: {command.name}, a {store_type.value} store 'counts', {args.records} input records ...")
        ran.append(run_application(broker, root / "apps" / application_id, application_id=application_id,
                                   store_name="counts", store_type=store_type, state_dir=state_dir,
                                   command=command, partitions=args.partitions, records=args.records))
        _say(f"{application_id}: {ran[-1].input_records} input records processed, stopped cleanly")
    _say(f"ready in {time.monotonic() - started:.0f} s: state directory {state_dir}, broker at {bootstrap}. Run:")
    for line in follow_up_commands(bootstrap, ran, service_dir):
        console.print(line, highlight=False, soft_wrap=True)
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``demo``, ``broker`` and ``instance`` on the ``kstate`` command's subparsers."""
    demo = sub.add_parser("demo", help="a broker, a Kafka Streams application with traffic and its state directory, "
                                       "and the inspect and audit commands to try on them",
                          description=cmd_demo.__doc__)
    demo.add_argument("--dir", default=str(DEMO_DIR), help="where the broker's service, the application's files and "
                                                           "the state directory go (default ./kstate-demo)")
    demo.add_argument("--store-type", action="append", choices=_built_types(), metavar="TYPE",
                      help="a store type to run, repeatable: one application each (default timestamped_kv; "
                           f"choices: {', '.join(_built_types())})")
    demo.add_argument("--records", type=int, default=1000, help="input records per application (default 1000)")
    demo.add_argument("--partitions", type=int, default=2, help="input and changelog partitions (default 2)")
    demo.add_argument("--instance", default="kafka-streams",
                      help="kafka-streams (default; the reference where Java or Maven is missing), reference, or an "
                           "instance command line (spec/instance-protocol.md)")
    demo.add_argument("--kafka-version", default="4.4.0", help="the Kafka Streams release (default 4.4.0)")
    demo.add_argument("--provider", default="embedded", choices=("embedded", "apache", "tansu"),
                      help="the broker: embedded (Apache Kafka where Java is installed, else Tansu; the default)")
    demo.add_argument("--bootstrap", help="use this running broker instead of starting one")
    demo.set_defaults(func=cmd_demo)

    broker = sub.add_parser("broker", help="start, stop or show the kit's broker (on 127.0.0.1)",
                            description=cmd_broker.__doc__)
    broker.add_argument("action", choices=("start", "stop", "status"),
                        help="start the service (prints the bootstrap address), stop it, or show it (exit 1: none)")
    broker.add_argument("--dir", default=".kstate/broker", help="the service's directory (default .kstate/broker)")
    broker.add_argument("--provider", default="embedded", choices=("embedded", "apache", "tansu"),
                        help="with start: embedded (Apache Kafka where Java is installed, else Tansu), apache, tansu")
    broker.set_defaults(func=cmd_broker)

    instance = sub.add_parser("instance", help="run an application instance (spec/instance-protocol.md)")
    verbs = instance.add_subparsers(dest="verb", required=True, metavar="VERB")
    run = verbs.add_parser("run", help="create the topics, feed input, run an instance until it committed it, stop it",
                           description=cmd_instance_run.__doc__)
    run.add_argument("--application-id", required=True, help="the application.id (consumer group, topic prefix)")
    run.add_argument("--store", required=True, metavar="NAME:TYPE", help="the store, e.g. counts:timestamped_kv")
    run.add_argument("--state-dir", required=True, help="Kafka Streams' state.dir")
    run.add_argument("--bootstrap", help="the broker (default: the one kstate broker start runs from --broker-dir)")
    run.add_argument("--broker-dir", default=".kstate/broker", help="where kstate broker start runs (default "
                                                                    ".kstate/broker)")
    run.add_argument("--instance", default="kafka-streams",
                     help="kafka-streams (default), reference, or an instance command line")
    run.add_argument("--kafka-version", default="4.4.0", help="the Kafka Streams release (default 4.4.0)")
    run.add_argument("--records", type=int, default=1000, help="input records (default 1000)")
    run.add_argument("--partitions", type=int, default=2, help="input and changelog partitions (default 2)")
    run.add_argument("--work-dir", default=".kstate/instances", help="the instance's config, status and log files")
    run.set_defaults(func=cmd_instance_run)
