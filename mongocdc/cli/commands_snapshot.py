"""``mongocdc snapshot``: copy the included collections into Kafka and exit, or (``--incremental``)
ask the running connector for an incremental snapshot and optionally wait for it."""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from mongocdc.cli import render
from mongocdc.cli.commands_signal import ChannelOpt, CollectionsOpt, FilterOpt
from mongocdc.cli.graceful_stop import GracefulStop
from mongocdc.cli.metrics_server import serve_metrics
from mongocdc.cli.options import CONNECTOR_FLAGS, ONE_SHOT_TIMEOUT_S, OutputOpt, examples, settings_flags
from mongocdc.cli.progress import SnapshotProgressView, render_summary
from mongocdc.cli.state import Output, state
from mongocdc.config import Settings
from mongocdc.errors import UnreachableError

if TYPE_CHECKING:
    from mongocdc.engine.snapshot import SnapshotReport
    from mongocdc.engine.source_offset import SourceOffset
    from mongocdc.sources.kafka.notifications import NotificationReader

log = logging.getLogger("mongocdc.snapshot")


def wait_for_incremental(settings: Settings, signal_id: str, stop: Any, *, timeout_s: float | None) -> SnapshotReport:
    """Follow the connector's stored progress until the snapshot ``signal_id`` is no longer running.

    The running connector keeps the progress in its offsets (``SourceOffset.incremental``) and, once it
    completed, the snapshot's id (``SourceOffset.completed_incremental``). The store is opened once and
    read again every half second. The offsets are written every ``offset.flush.interval.ms``, so this is
    the fallback of a connector without the ``sink`` notification channel (``incremental_wait``).
    """
    from mongocdc import wiring
    from mongocdc.engine.snapshot import CollectionReport, SnapshotReport
    from mongocdc.offsets.edits import missing_store

    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    seen = False
    done: dict[str, int] = {}
    store = wiring.offset_store(settings, create=False)
    try:
        records = store.records(settings.name)
        if not store.exists:
            missing = missing_store(settings)
            log.warning(
                "%s: waiting for a `mongocdc stream` named %r to create it and take up the snapshot (--timeout to "
                "stop waiting); %s",
                missing.message,
                settings.name,
                missing.hint,
            )
        elif not records:
            log.warning(
                "connector %r has no stored offsets in this store: waiting for a `mongocdc stream` of that name "
                "to start and take up the snapshot (--timeout to stop waiting)",
                settings.name,
            )
        with SnapshotProgressView() as view:
            while True:
                offsets = [_readable(r.offset) for r in records]
                stored = [o for o in offsets if o is not None]
                running = [
                    o.incremental
                    for o in stored
                    if o.incremental is not None and o.incremental.snapshot_id == signal_id
                ]
                report = SnapshotReport()
                for progress in running:
                    for index, ns in enumerate(progress.collections):
                        count = progress.documents if index == 0 else 0
                        report.collections[ns] = CollectionReport(ns, 0, documents=count)
                        if index == 0:
                            done[ns] = max(done.get(ns, 0), count)
                for ns, count in done.items():
                    if ns not in report.collections:
                        report.collections[ns] = CollectionReport(ns, 0, documents=count, done=True)
                seen = seen or bool(running)
                finished = any(o.completed_incremental == signal_id for o in stored)
                report.completed = finished or (seen and not running)
                view.update(report)
                if report.completed:
                    return report
                if deadline is not None and time.monotonic() > deadline:
                    assert timeout_s is not None
                    raise _timed_out(settings, signal_id, timeout_s, taken_up=seen, recorded_in="its offsets")
                if stop.wait(0.5):
                    return report
                records = store.records(settings.name)
    finally:
        store.close()


def _timed_out(
    settings: Settings, signal_id: str, timeout_s: float, *, taken_up: bool, recorded_in: str
) -> UnreachableError:
    """Exit 4 past ``--timeout``: no connector took the snapshot up, or it did not complete in time."""
    if not taken_up:
        return UnreachableError(
            f"no connector took up incremental snapshot {signal_id} within {timeout_s:g} s: "
            f"connector {settings.name!r} has not recorded it in {recorded_in}",
            hint=f"is `mongocdc stream` running with --name {settings.name} and the same --offsets "
            "and signal settings? The signal stays where it was sent and is read when it starts",
        )
    return UnreachableError(
        f"incremental snapshot {signal_id} did not complete within {timeout_s:g} s",
        hint="it goes on in the connector; follow it with `mongocdc offsets show` or its notifications",
    )


def _notification_reader(settings: Settings) -> NotificationReader | None:
    """The reader of the connector's notification topic, made before the signal is sent (it starts at the
    topic's end), when the connector writes notifications to Kafka (``notification.enabled.channels``)."""
    if "sink" not in settings.notification_enabled_channels:
        log.warning(
            "notification.enabled.channels has no 'sink': progress comes from the connector's stored offsets, "
            "written every offset.flush.interval.ms (%d ms); with notification.enabled.channels=sink (and "
            "notification.sink.topic.name) in the connector's configuration and this one, it is followed live",
            settings.offset_flush_interval_ms,
        )
        return None
    from mongocdc.sources.kafka.notifications import NotificationReader

    return NotificationReader(
        settings.kafka_client,
        settings.require("notification.sink.topic.name"),
        timeout_s=settings.connect_timeout_ms / 1000,
    )


def _readable(record: Mapping[str, Any]) -> SourceOffset | None:
    """The stored offset, or ``None`` when it cannot be read (the connector reports that itself)."""
    from mongocdc.engine.source_offset import SourceOffset

    try:
        return SourceOffset.from_record(record)
    except ValueError:
        return None


SNAPSHOT_EXAMPLES: Final = examples(
    "mongocdc snapshot -c connector.yaml",
    "mongocdc snapshot -c connector.yaml --incremental --collections shop.orders --wait --timeout 600",
)


def _wait(
    settings: Settings, reader: NotificationReader | None, signal_id: str, stop: Any, timeout: float | None
) -> SnapshotReport:
    from mongocdc.cli.incremental_wait import Estimates, follow_notifications

    if reader is None:
        report = wait_for_incremental(settings, signal_id, stop, timeout_s=timeout)
        estimates = Estimates(settings)
        estimates.ask(report.collections)
        estimates.settle(5.0)
        for ns, count in estimates.counts.items():
            if count is not None:
                report.collections[ns].estimated = count
        return report

    def timed_out(taken_up: bool) -> Exception:
        assert timeout is not None
        where = f"its notifications ({reader.topic})"
        return _timed_out(settings, signal_id, timeout, taken_up=taken_up, recorded_in=where)

    return follow_notifications(settings, reader, signal_id, stop, timeout_s=timeout, on_timeout=timed_out)


def render_incremental(output: Output, result: dict[str, Any], report: SnapshotReport | None) -> None:
    """The signal sent and, after --wait, each collection's documents read of its estimated count."""
    from mongocdc.cli.incremental_wait import collection_rows

    if output is Output.json:
        render.print_json(result if report is None else {**result, "snapshot": report.to_dict()})
        return
    render.table("incremental snapshot", ["field", "value"], [[k, v] for k, v in result.items()])
    if report is not None:
        state = "completed" if report.completed else "not completed"
        render.table(
            f"snapshot {result['id']}: {state}",
            ["collection", "read", "estimated", "seconds", "docs/s", "state"],
            collection_rows(report),
        )


@settings_flags(*CONNECTOR_FLAGS, "metrics.port", "metrics.host")
def snapshot(
    ctx: typer.Context,
    output: OutputOpt = Output.table,
    incremental: Annotated[
        bool,
        typer.Option(
            "--incremental",
            help="Ask the running connector (through a signal) for an incremental snapshot of --collections "
            "while it keeps streaming, instead of copying everything here and exiting.",
        ),
    ] = False,
    collections: CollectionsOpt = None,
    filters: FilterOpt = None,
    channel: ChannelOpt = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="With --incremental: show progress until the snapshot completes (live from the connector's "
            "notifications when notification.enabled.channels includes sink, else from its stored offsets).",
        ),
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="With --wait: give up waiting after this many seconds.", show_default=False),
    ] = None,
) -> None:
    """Copy every included collection into Kafka as read (op=r) events, then exit; resumable.

    With --incremental, the running connector snapshots the --collections in chunks while streaming.
    """
    from mongocdc import wiring
    from mongocdc.engine.metrics import Metrics

    settings = state(ctx).settings()
    stopper = GracefulStop()
    if incremental:
        from mongocdc.cli.commands_signal import build_signal, choose_channel, parse_filters, send_signal

        # sending the signal and each read of the progress are one short attempt, as for `signal send`
        settings = dataclasses.replace(settings, one_shot_timeout_s=ONE_SHOT_TIMEOUT_S)
        if not collections:
            raise typer.BadParameter("--incremental needs --collections REGEX", param_hint="'--collections'")
        data: dict[str, Any] = {"data-collections": list(collections), "type": "incremental"}
        if filters:
            data["additional-conditions"] = parse_filters(filters)
        signal = build_signal("execute-snapshot", str(uuid.uuid4()), data)
        target = choose_channel(settings, channel)
        reader = _notification_reader(settings) if wait else None
        try:
            sent = send_signal(settings, target, signal)
            result: dict[str, Any] = {"id": sent.signal_id, "channel": sent.channel.value, "to": sent.destination}
            report: SnapshotReport | None = None
            if wait:
                with stopper.installed():
                    report = _wait(settings, reader, sent.signal_id, stopper.event, timeout)
        finally:
            if reader is not None:
                reader.close()
        render_incremental(output, result, report)
        if stopper.exit_code:
            raise typer.Exit(stopper.exit_code)
        return
    if collections or filters or wait:
        raise typer.BadParameter("--collections, --filter and --wait go with --incremental")
    if settings.group_id is not None:
        from mongocdc import wiring_fleet

        wiring_fleet.refuse_while_group_runs(settings, "a snapshot of it here would run it a second time")
    metrics = Metrics(settings.name)
    with (
        stopper.installed(),
        serve_metrics(metrics, settings.metrics_port, settings.metrics_host),
        SnapshotProgressView() as progress,
        wiring.connector(
            settings,
            stop=stopper.event,
            on_progress=progress.update,
            metrics=metrics,
            estimate_after_s=progress.estimate_after_s,
        ) as group,
    ):
        outcome = group.run(snapshot_only=True)
    from mongocdc.engine.snapshot import SnapshotReport

    # a stop before the snapshot began still gets its (empty, not completed) summary: one result, always
    render_summary(output, outcome.snapshot or SnapshotReport())
    if stopper.exit_code:
        raise typer.Exit(stopper.exit_code)
