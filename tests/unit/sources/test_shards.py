"""Shard discovery: the shard list, per-shard connection strings and the watcher of shards that join or leave."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote, quote_plus

import pytest
from bson import Timestamp
from hypothesis import given
from hypothesis import strategies as st
from pymongo.errors import OperationFailure
from pymongo.uri_parser import parse_uri

from mongocdc.errors import ConfigError, ExitCode, UnsupportedTopologyError
from mongocdc.sources.mongo.shards import ShardChanges, ShardWatcher, list_shards, shard_connection_string
from mongocdc.sources.mongo.topology import Shard, parse_shard

SHARD = Shard("shard01", "shard01rs", ("s1a.example.net:27018", "s1b.example.net:27018"))


def parsed(uri: str) -> dict[str, Any]:
    """pymongo's own reading of a (non-SRV) connection string, fully validated."""
    assert uri.startswith("mongodb://")
    return parse_uri(uri, validate=True)


# -- shard_connection_string ---------------------------------------------------


def test_keeps_credentials_auth_and_tls_options_and_replaces_hosts_and_replica_set(tmp_path: Path) -> None:
    ca_file = tmp_path / "ca dir" / "ca.pem"
    ca_file.parent.mkdir()
    ca_file.write_text("not checked by the parser, only opened\n")
    ca_option = quote(str(ca_file), safe="")
    seed = (
        "mongodb://cdc:s3cret@cfg1.example.net:27019,cfg2.example.net:27019/"
        f"?replicaSet=configRS&authSource=admin&tls=true&tlsCAFile={ca_option}"
        "&readPreference=secondaryPreferred&directConnection=false&connectTimeoutMS=5000"
    )
    uri = shard_connection_string(seed, SHARD)
    assert uri == (
        "mongodb://cdc:s3cret@s1a.example.net:27018,s1b.example.net:27018/"
        f"?authSource=admin&tls=true&tlsCAFile={ca_option}"
        "&readPreference=secondaryPreferred&connectTimeoutMS=5000&replicaSet=shard01rs"
    )
    info = parsed(uri)
    assert info["nodelist"] == [("s1a.example.net", 27018), ("s1b.example.net", 27018)]
    assert (info["username"], info["password"]) == ("cdc", "s3cret")
    options = info["options"]
    assert options["replicaSet"] == "shard01rs"
    assert options["authSource"] == "admin"
    assert options["tls"] is True
    assert options["tlsCAFile"] == str(ca_file)
    assert "directConnection" not in options


def test_direct_connection_true_and_load_balanced_are_dropped() -> None:
    uri = shard_connection_string("mongodb://h:1/?directConnection=true&loadBalanced=false&w=majority", SHARD)
    assert "directConnection" not in uri and "loadBalanced" not in uri
    assert parsed(uri)["options"]["w"] == "majority"


def test_default_auth_database_in_the_path_is_kept() -> None:
    uri = shard_connection_string("mongodb://u:p@cfg:27019/reporting?replicaSet=configRS", SHARD)
    info = parsed(uri)
    assert info["database"] == "reporting"
    assert uri.startswith("mongodb://u:p@s1a.example.net:27018,s1b.example.net:27018/reporting?")


def test_seed_without_path_or_options() -> None:
    assert (
        shard_connection_string("mongodb://cfg:27019", SHARD)
        == "mongodb://s1a.example.net:27018,s1b.example.net:27018/?replicaSet=shard01rs"
    )
    assert shard_connection_string("mongodb://cfg:27019?w=1", SHARD).endswith("/?w=1&replicaSet=shard01rs")


@pytest.mark.parametrize(
    ("seed_userinfo", "user", "password"),
    [
        ("cdc%40corp:p%40ss%3Aw%2Frd", "cdc@corp", "p@ss:w/rd"),
        ("cdc:100%25%20sure%3F%23", "cdc", "100% sure?#"),
        ("cdc:a+b", "cdc", "a b"),  # pymongo reads '+' in user info as a space (unquote_plus)
        ("cdc:a%2Bb", "cdc", "a+b"),
        ("%C3%A9l%C3%A8ve:m%C3%B8t%5B%5D", "élève", "møt[]"),
    ],
)
def test_credentials_are_decoded_as_pymongo_does_and_encoded_again(
    seed_userinfo: str, user: str, password: str
) -> None:
    seed = f"mongodb://{seed_userinfo}@cfg:27019/?replicaSet=configRS"
    assert (parse_uri(seed)["username"], parse_uri(seed)["password"]) == (user, password)
    info = parsed(shard_connection_string(seed, SHARD))
    assert (info["username"], info["password"]) == (user, password)


@given(st.text(min_size=1, max_size=20), st.text(max_size=30))
def test_any_user_and_password_survive(user: str, password: str) -> None:
    seed = f"mongodb://{quote_plus(user)}:{quote_plus(password)}@cfg:27019/"
    info = parsed(shard_connection_string(seed, SHARD))
    assert (info["username"], info["password"]) == (user, password)


def test_user_without_password_for_x509() -> None:
    subject = "CN=cdc,OU=apps,O=Example"
    seed = f"mongodb://{subject.replace('=', '%3D').replace(',', '%2C')}@cfg:27019/?authMechanism=MONGODB-X509&tls=true"
    uri = shard_connection_string(seed, SHARD)
    info = parsed(uri)
    assert info["username"] == subject and info["password"] == parse_uri(seed)["password"] == ""
    assert "@" in uri and ":" not in uri.split("@")[0].removeprefix("mongodb://")
    assert info["options"]["authMechanism"] == "MONGODB-X509"


def test_srv_seed_becomes_a_plain_uri_with_tls_on() -> None:
    seed = (
        "mongodb+srv://cdc:p%40ss@cluster0.abcde.mongodb.net/"
        "?retryWrites=true&w=majority&srvMaxHosts=2&srvServiceName=mongodb&appName=cdc"
    )
    uri = shard_connection_string(seed, SHARD)
    assert uri == (
        "mongodb://cdc:p%40ss@s1a.example.net:27018,s1b.example.net:27018/"
        "?retryWrites=true&w=majority&appName=cdc&tls=true&replicaSet=shard01rs"
    )
    info = parsed(uri)  # no DNS: the result is not an SRV URI
    assert info["options"]["tls"] is True
    assert info["password"] == "p@ss"


def test_srv_seed_keeps_an_explicit_tls_setting() -> None:
    uri = shard_connection_string("mongodb+srv://cluster0.example.net/?ssl=false", SHARD)
    assert "tls=true" not in uri
    assert parsed(uri)["options"]["tls"] is False


def test_semicolon_separated_options() -> None:
    uri = shard_connection_string("mongodb://cfg:27019/?authSource=admin;replicaSet=configRS;w=1", SHARD)
    assert uri.endswith("?authSource=admin&w=1&replicaSet=shard01rs")


def test_params_are_appended_and_override_seed_options() -> None:
    uri = shard_connection_string(
        "mongodb://u:p@cfg:27019/?authSource=cfgdb&readPreference=primary",
        SHARD,
        params="authSource=admin&readPreference=secondaryPreferred&replicaSet=ignored&directConnection=true",
    )
    assert uri.endswith("?authSource=admin&readPreference=secondaryPreferred&replicaSet=shard01rs")


def test_readpreference_tags_may_repeat() -> None:
    uri = shard_connection_string(
        "mongodb://cfg/?readPreference=nearest&readPreferenceTags=dc:ny&readPreferenceTags=", SHARD
    )
    assert parsed(uri)["options"]["readPreferenceTags"] == [{"dc": "ny"}, {}]


def test_ipv6_and_replica_set_names_needing_escapes() -> None:
    shard = Shard("s", "rs one", ("[::1]:27018", "[fe80::1]:27018"))
    info = parsed(shard_connection_string("mongodb://cfg:27019/", shard))
    assert info["nodelist"] == [("::1", 27018), ("fe80::1", 27018)]
    assert info["options"]["replicaSet"] == "rs one"


def test_a_shard_that_is_not_a_replica_set_is_refused() -> None:
    with pytest.raises(UnsupportedTopologyError) as refused:
        shard_connection_string("mongodb://cfg:27019/", Shard("legacy", None, ("h1:27018",)))
    assert refused.value.exit_code == ExitCode.CONFIG
    assert "no oplog" in refused.value.message and "legacy" in refused.value.message
    assert refused.value.hint is not None and "mongodb.connection.mode=sharded" in refused.value.hint
    with pytest.raises(UnsupportedTopologyError, match="no hosts"):
        shard_connection_string("mongodb://cfg:27019/", Shard("empty", "rs", ()))


@pytest.mark.parametrize(
    "seed",
    [
        "postgres://cdc:hunter2@cfg/",
        "mongodb://cdc:hun@ter2@cfg/",  # an unescaped '@' in the password
        "mongodb://cdc:hunter2@cfg/?tls",  # an option without a value
    ],
)
def test_malformed_seeds_are_config_errors_without_the_password(seed: str) -> None:
    with pytest.raises(ConfigError) as refused:
        shard_connection_string(seed, SHARD)
    assert refused.value.exit_code == ExitCode.CONFIG
    assert "hunter2" not in str(refused.value) and "hun@ter2" not in str(refused.value)


def test_malformed_params_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="key=value"):
        shard_connection_string("mongodb://cfg/", SHARD, params="tls")


# -- the shard list ----------------------------------------------------------


def test_config_shards_document_variants() -> None:
    assert parse_shard({"_id": "s", "host": "rs/h1:1,h2:2", "state": 1, "draining": True}) == Shard(
        "s", "rs", ("h1:1", "h2:2")
    )
    assert parse_shard({"_id": "s", "host": "rs/h1:1,", "tags": ["east"]}) == Shard("s", "rs", ("h1:1",))
    assert parse_shard({"_id": "s", "host": "rs/[::1]:27018"}) == Shard("s", "rs", ("[::1]:27018",))
    assert parse_shard({"_id": "s"}) == Shard("s", None, ())


# A listShards reply shaped like a MongoDB 7.0 mongos's, and config.shards documents alike.
LIST_SHARDS_REPLY = {
    "shards": [
        {"_id": "shard02", "host": "shard02/s2a:27018,s2b:27018", "state": 1, "topologyTime": Timestamp(1700000100, 2)},
        {
            "_id": "shard01",
            "host": "shard01/s1a:27018,s1b:27018",
            "state": 1,
            "draining": True,
            "topologyTime": Timestamp(1700000000, 1),
        },
    ],
    "ok": 1.0,
    "$clusterTime": {"clusterTime": Timestamp(1700000200, 1)},
    "operationTime": Timestamp(1700000200, 1),
}


class FakeCollection:
    def __init__(self, docs: list[dict[str, Any]] | Exception) -> None:
        self.docs = docs

    def find(self) -> list[dict[str, Any]]:
        if isinstance(self.docs, Exception):
            raise self.docs
        return list(self.docs)


class FakeAdmin:
    def __init__(self, reply: dict[str, Any] | Exception) -> None:
        self.reply = reply
        self.commands: list[str] = []

    def command(self, name: str) -> dict[str, Any]:
        self.commands.append(name)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


class FakeClient:
    """Just what list_shards touches: ``admin.command`` and ``client["config"]["shards"].find()``."""

    def __init__(self, reply: dict[str, Any] | Exception, config_shards: list[dict[str, Any]] | Exception) -> None:
        self.admin = FakeAdmin(reply)
        self.config = {"shards": FakeCollection(config_shards)}

    def __getitem__(self, name: str) -> dict[str, FakeCollection]:
        assert name == "config"
        return self.config


def test_list_shards_on_mongos_uses_list_shards_sorted_and_keeps_draining_shards() -> None:
    client = FakeClient(LIST_SHARDS_REPLY, OperationFailure("must not be read"))
    shards = list_shards(cast(Any, client))
    assert shards == [
        Shard("shard01", "shard01", ("s1a:27018", "s1b:27018")),
        Shard("shard02", "shard02", ("s2a:27018", "s2b:27018")),
    ]
    assert client.admin.commands == ["listShards"]


@pytest.mark.parametrize(
    "failure",
    [
        OperationFailure("no such command: 'listShards'", code=59),  # a config server, not a mongos
        OperationFailure("not authorized on admin to execute command { listShards: 1 }", code=13),
    ],
)
def test_list_shards_falls_back_to_config_shards(failure: OperationFailure) -> None:
    docs = [{"_id": "b", "host": "rsB/hb:1", "state": 1}, {"_id": "a", "host": "rsA/ha:1", "state": 1}]
    shards = list_shards(cast(Any, FakeClient(failure, docs)))
    assert shards == [Shard("a", "rsA", ("ha:1",)), Shard("b", "rsB", ("hb:1",))]


def test_list_shards_raises_when_config_shards_cannot_be_read_either() -> None:
    denied = OperationFailure("not authorized on config to execute command { find: 'shards' }", code=13)
    with pytest.raises(OperationFailure, match="on config"):
        list_shards(cast(Any, FakeClient(OperationFailure("nope", code=59), denied)))


# -- the watcher ---------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ShardList:
    """A shard list the test edits; ``fail`` makes the next reads raise."""

    def __init__(self, *shards: Shard) -> None:
        self.shards = list(shards)
        self.reads = 0
        self.fail: Exception | None = None

    def __call__(self) -> Sequence[Shard]:
        self.reads += 1
        if self.fail is not None:
            raise self.fail
        return list(self.shards)


A = Shard("a", "rsA", ("ha:1",))
B = Shard("b", "rsB", ("hb:1",))
C = Shard("c", "rsC", ("hc:1",))


def make_watcher(
    shard_list: ShardList,
    clock: FakeClock,
    *,
    known: Sequence[Shard] = (),
    on_added: Callable[[Shard], None] | None = None,
) -> tuple[ShardWatcher, list[Shard], list[Shard]]:
    added: list[Shard] = []
    removed: list[Shard] = []
    watcher = ShardWatcher(shard_list, 30.0, on_added or added.append, removed.append, known=known, clock=clock)
    return watcher, added, removed


def test_reports_only_shards_added_after_the_known_ones() -> None:
    clock, shard_list = FakeClock(), ShardList(A, B)
    watcher, added, removed = make_watcher(shard_list, clock, known=[A, B])
    assert watcher.poll_once() == ShardChanges()
    assert not watcher.poll_once()
    shard_list.shards = [C, A, B]
    assert watcher.poll_once() == ShardChanges(added=(C,))
    assert added == [C] and removed == []
    assert watcher.poll_once() == ShardChanges()
    assert added == [C]
    assert watcher.current == (A, B, C)


def test_without_known_shards_the_first_poll_reports_all_in_name_order() -> None:
    clock, shard_list = FakeClock(), ShardList(C, A, B)
    watcher, added, _ = make_watcher(shard_list, clock)
    assert watcher.poll_once().added == (A, B, C)
    assert added == [A, B, C]


def test_polls_are_due_every_interval_on_the_clock() -> None:
    clock, shard_list = FakeClock(), ShardList(A)
    watcher, added, _ = make_watcher(shard_list, clock, known=[A])
    assert watcher.seconds_until_due() == 0.0
    assert watcher.poll_if_due() == ShardChanges()
    assert shard_list.reads == 1
    clock.advance(29.9)
    assert watcher.seconds_until_due() == pytest.approx(0.1)
    assert watcher.poll_if_due() is None
    shard_list.shards = [A, B]
    assert shard_list.reads == 1
    clock.advance(0.1)
    assert watcher.poll_if_due() == ShardChanges(added=(B,))
    assert added == [B] and shard_list.reads == 2
    assert watcher.seconds_until_due() == 30.0


def test_removed_shards_and_replica_set_renames_are_reported() -> None:
    clock, shard_list = FakeClock(), ShardList(A, B)
    watcher, added, removed = make_watcher(shard_list, clock, known=[A, B])
    renamed = Shard("b", "rsB2", ("hb2:1",))
    shard_list.shards = [renamed]
    assert watcher.poll_once() == ShardChanges(added=(renamed,), removed=(A, B))
    assert removed == [A, B] and added == [renamed]
    assert watcher.current == (renamed,)


def test_host_changes_update_the_shard_silently() -> None:
    clock, shard_list = FakeClock(), ShardList(A)
    watcher, added, removed = make_watcher(shard_list, clock, known=[A])
    grown = Shard("a", "rsA", ("ha:1", "ha2:1"))
    shard_list.shards = [grown]
    assert watcher.poll_once() == ShardChanges()
    assert added == [] and removed == []
    assert watcher.current == (grown,)


def test_a_failing_callback_gets_the_shard_again_next_poll() -> None:
    clock, shard_list = FakeClock(), ShardList(A)
    calls: list[Shard] = []

    def on_added(shard: Shard) -> None:
        calls.append(shard)
        if len(calls) == 1:
            raise RuntimeError("could not open the stream")

    watcher, _, _ = make_watcher(shard_list, clock, on_added=on_added)
    shard_list.shards = [A, B]
    with pytest.raises(RuntimeError, match="could not open"):
        watcher.poll_once()
    assert watcher.current == ()
    assert watcher.poll_once().added == (A, B)
    assert calls == [A, A, B]


def test_a_callback_may_read_the_current_shards() -> None:
    clock, shard_list = FakeClock(), ShardList(A, B)
    seen: list[tuple[Shard, ...]] = []
    watcher: ShardWatcher
    watcher, _, _ = make_watcher(shard_list, clock, on_added=lambda shard: seen.append(watcher.current))
    watcher.poll_once()
    assert seen == [(), (A,)]


def test_a_failing_list_still_counts_as_a_poll() -> None:
    clock, shard_list = FakeClock(), ShardList(A)
    watcher, _, _ = make_watcher(shard_list, clock, known=[A])
    shard_list.fail = OperationFailure("connection reset")
    with pytest.raises(OperationFailure):
        watcher.poll_once()
    assert watcher.poll_if_due() is None
    assert shard_list.reads == 1
    assert watcher.seconds_until_due() == 30.0


def test_poll_if_due_logs_failures_without_the_password_and_polls_again_an_interval_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, shard_list = FakeClock(), ShardList(A)
    watcher, added, _ = make_watcher(shard_list, clock, known=[A])
    shard_list.fail = OperationFailure("cannot reach mongodb://cdc:hunter2@cfg:27019/")
    with caplog.at_level(logging.WARNING, logger="mongocdc.mongo.shards"):
        assert watcher.poll_if_due() is None
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and "reading the shard list or starting a shard's stream failed" in warnings[0]
    assert "hunter2" not in warnings[0] and "retrying in 30 s" in warnings[0]
    shard_list.fail = None
    shard_list.shards = [A, B]
    clock.advance(29.9)
    assert watcher.poll_if_due() is None and shard_list.reads == 1
    clock.advance(0.1)
    assert watcher.poll_if_due() == ShardChanges(added=(B,))
    assert added == [B]


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        ShardWatcher(ShardList(), 0, lambda shard: None, lambda shard: None)
