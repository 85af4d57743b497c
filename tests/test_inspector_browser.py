"""The web inspector in a real browser (headless Chromium over W3C WebDriver, tests/webdriver.py).

A broker that confluent-kafka filled with plain, compressed (lz4, zstd, gzip), idempotent and transactional
(committed and aborted) records, a consumer group with a live member and an empty one: each view is opened at its
URL and must show the broker's numbers, stay live without a reload, search, cut long values, and run the actions.
Data made to inject markup must be shown as text and never run. A screenshot of each view is saved to
``$MINIBROKER_ARTIFACTS/inspector`` (default ``.artifacts/inspector``).
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from minibroker.testing import Broker
from tests.clientutil import TIMEOUT_S
from tests.webdriver import Session, browser_fixture, skip_reason  # noqa: F401  (the browser fixture)

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ["MINIBROKER_ARTIFACTS"]) / "inspector" if os.environ.get("MINIBROKER_ARTIFACTS") \
    else REPO / ".artifacts" / "inspector"
TOPIC = "orders"
TXN_ID = "order-writer"
GROUP = "billing"
CONSUMER_GROUP = "shipping"  # the consumer rebalance protocol (KIP-848)
EMPTY_GROUP = "audit"
BIG_VALUE = "é" * 1500  # 3000 bytes of UTF-8: cut at 1 KiB on the page
PAGED_RECORDS = 120  # partition 1: more than one page of 50
COMMITTED = {0: 10, 1: 100, 2: 1}
PAYLOADS = ('<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=1</script>",
            '"><svg onload="window.__pwned=1">')
HOSTILE = "".join(PAYLOADS)


@dataclass
class Filled:
    broker: Broker
    url: str
    base_ms: int  # timestamp of the first plain record; record i has base_ms + 1000 * i
    offsets: dict[str, list[int]]  # offsets of partition 0 by kind of record


def producer(bootstrap: str, **config: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "client.id": "inspector-test", **config})


def produce(sender: Producer, values: list[tuple[str, str]], partition: int = 0, **extra: Any) -> None:
    for key, value in values:
        sender.produce(TOPIC, value.encode(), key.encode(), partition=partition, **extra)
    sender.flush(TIMEOUT_S)
    assert len(sender) == 0


def fill(broker: Broker) -> Filled:
    """Partition 0: plain records with set timestamps and headers, a long value, an lz4, a zstd and a gzip batch, an
    idempotent batch, a committed and an aborted transaction; partition 1: two pages; a live group and an empty one."""
    bootstrap = broker.bootstrap_servers
    broker.create_topic(TOPIC, 3, 1)
    base_ms = int(time.time() * 1000) - 60_000
    plain = producer(bootstrap, **{"enable.idempotence": False})
    for i in range(5):
        order = json.dumps({"order": i, "item": "widget", "qty": i + 1})
        plain.produce(TOPIC, order.encode(), f"order-{i}".encode(), partition=0, timestamp=base_ms + 1000 * i,
                      headers=[("source", b"web"), ("trace", f"t-{i}".encode())])
    plain.flush(TIMEOUT_S)
    produce(plain, [("big", BIG_VALUE)], timestamp=base_ms + 5000)
    for codec in ("lz4", "zstd", "gzip"):  # compressible values, or librdkafka sends them as they are
        produce(producer(bootstrap, **{"compression.type": codec, "enable.idempotence": False}),
                [(f"{codec}-{i}", json.dumps({"codec": codec, "padding": "abc" * 40})) for i in range(3)])
    produce(producer(bootstrap, **{"enable.idempotence": True}), [(f"idem-{i}", f"idempotent {i}") for i in range(3)])
    txn = producer(bootstrap, **{"transactional.id": TXN_ID})
    txn.init_transactions(TIMEOUT_S)
    for outcome, done in (("commit", "kept"), ("abort", "rolled back")):
        txn.begin_transaction()
        produce(txn, [(f"{outcome}-{i}", f"{done} {i}") for i in range(2)])
        txn.commit_transaction(TIMEOUT_S) if outcome == "commit" else txn.abort_transaction(TIMEOUT_S)
    produce(plain, [(f"page-{i}", f"record {i} of partition 1") for i in range(PAGED_RECORDS)], partition=1)
    produce(plain, [("p2", "first of partition 2")], partition=2)
    offsets = {"plain": list(range(5)), "big": [5], "lz4": [6, 7, 8], "zstd": [9, 10, 11], "gzip": [12, 13, 14],
               "idempotent": [15, 16, 17], "committed": [18, 19], "commit_marker": [20], "aborted": [21, 22],
               "abort_marker": [23]}
    assert broker.records(TOPIC, 0, 23, 1)["high_watermark"] == 24, "partition 0 is not laid out as the tests expect"

    empty = Consumer({"bootstrap.servers": bootstrap, "group.id": EMPTY_GROUP, "enable.auto.commit": False})
    empty.commit(offsets=[TopicPartition(TOPIC, p, 2) for p in range(3)], asynchronous=False)
    empty.close()
    return Filled(broker, broker.control_url, base_ms, offsets)


def member(bootstrap: str, group: str, client_id: str, **config: Any) -> Consumer:
    """A consumer subscribed to the topic, once it holds all three partitions."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **config})
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + TIMEOUT_S
    while len(consumer.assignment()) < 3 and time.monotonic() < deadline:
        consumer.poll(0.1)
    return consumer


@pytest.fixture(scope="module")
def filled() -> Iterator[Filled]:
    with Broker(nodes=2, control=True, transcript=True, offsets_topic_num_partitions=2,
                transaction_state_log_num_partitions=2) as broker:
        data = fill(broker)
        members = []
        try:
            members.append(member(broker.bootstrap_servers, GROUP, "billing-app"))
            members[0].commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()], asynchronous=False)
            members.append(member(broker.bootstrap_servers, CONSUMER_GROUP, "shipping-app",
                                  **{"group.protocol": "consumer"}))
            broker.wait_for(group_stable=GROUP)
            broker.wait_for(group_stable=CONSUMER_GROUP)
            yield data
        finally:
            for consumer in members:
                consumer.close()


# ---- page helpers ----


def texts(page: Session, css: str) -> list[str]:
    """The text of every shown element matching css (hidden ones are left out), in one round trip."""
    return page.execute("""return Array.from(document.querySelectorAll(arguments[0]))
        .filter(e => e.checkVisibility()).map(e => e.innerText.trim())""", css)


# A view's first poll loads its scripts and its API answers: with both cores busy it has taken over 10 s.
VIEW_TIMEOUT_S = 30.0


def shown(page: Session, css: str) -> bool:
    """Whether an element matching css is on the page and visible (a form is made hidden and shown once the first
    answer says that actions are allowed)."""
    return page.execute("return Array.from(document.querySelectorAll(arguments[0])).some(e => e.checkVisibility())", css)


def open_view(page: Session, url: str, ready_css: str, what: str) -> None:
    """Open url and wait until ready_css is shown; a failure shows what the page showed instead."""
    page.get(url)
    try:
        page.wait(lambda: shown(page, ready_css), timeout_s=VIEW_TIMEOUT_S, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the page shows:\n{page.execute('return document.body.innerText')}") from None


def records_shown(page: Session) -> list[dict[str, Any]]:
    """The message browser's record rows: offset, classes, text."""
    return page.execute("""return Array.from(document.querySelectorAll('table.messages tr.record'), row => ({
        offset: Number(row.dataset.offset), classes: row.className, text: row.innerText}))""")


def click(page: Session, css: str) -> None:
    """Click what css finds; retried while a poll replaces it."""
    page.wait(lambda: page.find(css).click() is None, what=f"a clickable {css}")


def type_into(page: Session, css: str, text: str) -> None:
    """Type into what css finds; retried while it is not shown yet or a poll replaces it."""
    page.wait(lambda: page.find(css).send_keys(text) is None, what=f"a field {css} to type into")


def shot(page: Session, name: str) -> None:
    page.screenshot(ARTIFACTS / f"{name}.png")


def api(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as answer:
        return json.loads(answer.read())


def row_cells(page: Session, table_css: str) -> list[list[str]]:
    return page.execute("""return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr'),
        row => Array.from(row.cells, cell => cell.innerText.trim()))""", table_css)


# ---- views ----


def test_cluster_view_lists_nodes_topics_groups_and_transactions(browser: Session, filled: Filled) -> None:
    open_view(browser, filled.url + "/", "table.topics a[href='/topics/orders']", "the topic list")
    nodes = browser.wait(lambda: texts(browser, "table.nodes td code"), what="node addresses")
    assert sorted(nodes) == sorted(filled.broker.node_addresses.values())
    settings = texts(browser, "table.settings")[0]
    assert "transcript.enabled" in settings and "offsets.topic.num.partitions" in settings
    browser.wait(lambda: any(cells[0] == "Produce" for cells in row_cells(browser, "table.requests")),
                 what="Produce requests counted")
    groups = {cells[0]: cells for cells in row_cells(browser, "table.groups")}
    assert groups[GROUP][1:4] == ["classic", "consumer", "Stable"] and groups[GROUP][4] == "1"
    assert groups[EMPTY_GROUP][3] == "Empty"
    assert groups[CONSUMER_GROUP][1:5] == ["consumer", "consumer", "Stable", "1"]
    txns = {cells[0]: cells for cells in row_cells(browser, "table.transactions")}
    assert txns[TXN_ID][1] == "CompleteAbort"
    assert txns[TXN_ID][2] == str(filled.broker.transaction(TXN_ID)["producer_id"])
    shot(browser, "cluster")


def test_topic_view_shows_partitions_configs_and_every_kind_of_batch(browser: Session, filled: Filled) -> None:
    open_view(browser, f"{filled.url}/topics/{TOPIC}", "table.messages tr.record", "the message browser")
    expected = api(f"{filled.url}/v1/topics/{TOPIC}")["partitions"]
    partitions = browser.wait(lambda: row_cells(browser, "table.partitions"), what="the partitions")
    assert [cells[:7] for cells in partitions] == [
        [str(p["partition"]), str(p["leader"]), str(p["leader_epoch"]), ", ".join(map(str, p["replicas"])),
         str(p["log_start_offset"]), str(p["high_watermark"]), str(p["last_stable_offset"])] for p in expected]
    assert [p["high_watermark"] for p in expected] == [24, PAGED_RECORDS, 1]
    click(browser, "details.configs summary")
    assert "cleanup.policy" in browser.wait(lambda: texts(browser, "table.configs"), what="the configs")[0]

    batches = texts(browser, "table.messages tr.batch")
    for codec in ("lz4", "zstd", "gzip"):
        assert sum(codec in b for b in batches) == 1, batches
    idempotent = filled.broker.records(TOPIC, 0, 15, 1)["batches"][0]
    assert any(f"producer {idempotent['producerId']} epoch 0 sequence 0–2" in b for b in batches), batches
    assert sum("transactional" in b for b in batches) == 4  # two data batches, two markers
    assert sum("aborted" in b for b in batches) == 1

    rows = {row["offset"]: row for row in records_shown(browser)}
    assert sorted(rows) == list(range(24))
    for offset in filled.offsets["aborted"]:
        assert "aborted" in rows[offset]["classes"].split() and "aborted" in rows[offset]["text"]
    for offset in filled.offsets["committed"] + filled.offsets["plain"]:
        assert "aborted" not in rows[offset]["classes"].split()
    assert "COMMIT" in rows[20]["text"] and "control-record" in rows[20]["classes"]
    assert "ABORT" in rows[23]["text"] and "control-record" in rows[23]["classes"]
    assert "order-0" in rows[0]["text"] and "source: web" in rows[0]["text"] and "trace: t-0" in rows[0]["text"]
    shot(browser, "topic")


def test_partition_view_searches_by_offset_and_by_timestamp_and_pages(browser: Session, filled: Filled) -> None:
    open_view(browser, f"{filled.url}/topics/{TOPIC}/0", "table.messages tr.record", "partition 0's records")
    type_into(browser, "input.offset-input", "12\ue007")  # Enter submits the form
    browser.wait(lambda: [r["offset"] for r in records_shown(browser) if "target" in r["classes"]] == [12],
                 what="offset 12 marked")
    assert records_shown(browser)[0]["offset"] == 12 and "offset=12" in browser.current_url
    shot(browser, "partition")

    type_into(browser, "input.time-input", f"{filled.base_ms + 2500}\ue007")
    browser.wait(lambda: [r["offset"] for r in records_shown(browser) if "target" in r["classes"]] == [3],
                 what="the first record at or after the time searched")
    assert f"timestamp={filled.base_ms + 2500}" in browser.current_url

    click(browser, "select.format option[value='hex']")
    browser.wait(lambda: "6f 72 64 65 72 2d 33" in records_shown(browser)[0]["text"], what="order-3's key in hex")
    click(browser, "select.format option[value='json']")
    browser.wait(lambda: '"item": "widget"' in "".join(texts(browser, "tr.target pre.json")),
                 what="the value as pretty JSON")

    open_view(browser, f"{filled.url}/topics/{TOPIC}/1", "table.messages tr.record", "partition 1's first page")
    assert [r["offset"] for r in records_shown(browser)] == list(range(50))
    click(browser, "button.next")
    browser.wait(lambda: [r["offset"] for r in records_shown(browser)] == list(range(50, 100)), what="the second page")
    click(browser, "button.latest")
    browser.wait(lambda: [r["offset"] for r in records_shown(browser)] == list(range(70, 120)), what="the last page")


def test_a_cut_value_links_to_the_whole_value(browser: Session, filled: Filled) -> None:
    open_view(browser, f"{filled.url}/topics/{TOPIC}/0?offset=5", "tr.record[data-offset='5'] a", "the cut value")
    shown = texts(browser, "tr.record[data-offset='5'] td.value .text")[0]
    assert len(shown.encode()) == 1024 and BIG_VALUE.startswith(shown)
    assert "cut at 1.0 KiB of 2.9 KiB" in texts(browser, "tr.record[data-offset='5'] td.value")[0]
    click(browser, "tr.record[data-offset='5'] td.value a")
    browser.wait(lambda: browser.current_url.endswith(f"/topics/{TOPIC}/0/records/5"), what="the record's URL")
    assert browser.wait(lambda: texts(browser, ".full-value"), what="the whole value") == [BIG_VALUE]
    shot(browser, "record")


def test_the_export_link_downloads_the_range_shown(browser: Session, filled: Filled) -> None:
    open_view(browser, f"{filled.url}/topics/{TOPIC}/0?offset=15", "tr.record[data-offset='15']", "offset 15 on")
    href = browser.wait(lambda: browser.find("a.export").dom_property("href"), what="the export link")
    assert urllib.parse.urlsplit(href).query == "offset=15&end=24"
    with urllib.request.urlopen(href, timeout=TIMEOUT_S) as answer:
        lines = [json.loads(line) for line in answer.read().splitlines()]
        assert "attachment" in answer.headers["Content-Disposition"]
    assert [(r["offset"], r["aborted"]) for r in lines] == [(o, o in (21, 22)) for o in range(15, 24)]
    shot(browser, "partition-transactions")


def test_live_update_without_reload(browser: Session, filled: Filled) -> None:
    open_view(browser, f"{filled.url}/topics/{TOPIC}", "table.partitions tbody tr", "the partitions")
    browser.execute("window.__sameDocument = true")

    def partition_2() -> tuple[str, str]:
        cells = row_cells(browser, "table.partitions")[2]
        return cells[5], cells[9]  # high watermark, records per second

    before = int(partition_2()[0])
    produce(producer(filled.broker.bootstrap_servers), [("live", f"live {i}") for i in range(3)], partition=2)
    _, rate = browser.wait(lambda: (seen := partition_2())[0] == str(before + 3) and seen,
                           what="the new high watermark")
    assert rate != "0.0/s", "the poll that saw the new records shows them as throughput"
    assert browser.execute("return window.__sameDocument") is True
    assert browser.wait(lambda: browser.find_all("table.partitions svg.spark polyline"), what="throughput sparklines")


def test_a_hidden_tab_stops_polling_and_a_shown_one_resumes(browser: Session, filled: Filled) -> None:
    open_view(browser, filled.url + "/faults", "table.fault-list", "the fault list")
    browser.execute("""window.__calls = 0;
        const fetchOriginal = window.fetch;
        window.fetch = (...args) => { window.__calls += 1; return fetchOriginal(...args); };
        window.__setVisibility = (state) => {
            Object.defineProperty(document, "visibilityState", { value: state, configurable: true });
            document.dispatchEvent(new Event("visibilitychange"));
        };
        window.__setVisibility("hidden");""")
    time.sleep(0.3)  # a poll in flight when the tab was hidden ends
    calls = browser.execute("return window.__calls")
    time.sleep(2.0)  # more than one poll interval
    assert browser.execute("return window.__calls") == calls
    browser.execute("window.__setVisibility('visible')")
    browser.wait(lambda: browser.execute("return window.__calls") > calls, what="polls again once shown")


def test_group_view_shows_members_assignments_and_lag(browser: Session, filled: Filled) -> None:
    open_view(browser, f"{filled.url}/groups/{GROUP}", "table.lag tbody tr td.lag", "the group's lag")
    hws = {p["partition"]: p["high_watermark"] for p in api(f"{filled.url}/v1/topics/{TOPIC}")["partitions"]}
    lag = browser.wait(lambda: row_cells(browser, "table.lag"), what="the lag")
    assert lag == [[TOPIC, str(p), str(COMMITTED[p]), str(hws[p]), str(hws[p] - COMMITTED[p])] for p in range(3)]
    members = row_cells(browser, "table.members")
    assert len(members) == 1 and members[0][2] == "billing-app" and members[0][4] == f"{TOPIC}: 0, 1, 2"
    facts = texts(browser, ".facts")[0]
    assert "classic" in facts and "Stable" in facts
    assert texts(browser, ".total-lag") == [str(sum(hws[p] - COMMITTED[p] for p in range(3)))]
    browser.wait(lambda: browser.find_all("svg.chart polyline"), what="the lag chart")
    shot(browser, "group")

    open_view(browser, f"{filled.url}/groups/{CONSUMER_GROUP}", "table.members tbody tr .client-id", "its member")
    assert "consumer" in texts(browser, ".facts")[0]
    [shipping] = row_cells(browser, "table.members")
    assert shipping[2] == "shipping-app" and shipping[4] == f"{TOPIC}: 0, 1, 2"


def test_share_group_view_shows_each_records_state(browser: Session, filled: Filled) -> None:
    """A share group's page: its member, its start offsets, and the records it holds, with their state and holder.
    (What acknowledgements do to the records is asserted through Broker.group in test_share_consumer.py; here a
    commit right after a poll can meet librdkafka's own in-flight ShareFetch and answer INVALID_SHARE_SESSION_EPOCH.)"""
    bootstrap, group = filled.broker.bootstrap_servers, "invoicing"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in (
        ("share.auto.offset.reset", "earliest"),
        ("share.record.lock.duration.ms", "60000"),  # the longest allowed: this broker runs on the wall clock
    )]
    for future in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                                  incremental_configs=configs)]).values():
        future.result(TIMEOUT_S)
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "invoicing-app",
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe([TOPIC])
        held: list[Any] = []  # partition 2's records, held; the others' accepted (a poll needs the last one's acked)
        deadline = time.monotonic() + TIMEOUT_S
        while not held and time.monotonic() < deadline:
            for message in consumer.poll(0.5):
                assert message.error() is None, message.error()
                if message.partition() == 2:
                    held.append(message)
                else:
                    consumer.acknowledge(message)
        offsets = sorted(m.offset() for m in held)  # other tests may have added to partition 2
        open_view(browser, f"{filled.url}/groups/{group}", "table.in-flight tbody tr", "the in-flight records")
        assert "share" in texts(browser, ".facts")[0]
        [member] = row_cells(browser, "table.members")
        assert member[2] == "invoicing-app" and member[4] == f"{TOPIC}: 0, 1, 2"
        rows = browser.wait(lambda: [r for r in row_cells(browser, "table.in-flight") if r[1:2] == ["2"]], what="partition 2")
        shown = "–".join(dict.fromkeys(map(str, (offsets[0], offsets[-1]))))  # "0", or "0–3" for a range
        assert [r[:6] for r in rows] == [[TOPIC, "2", shown, "acquired", "1", member[0]]]
        shot(browser, "share-group")
    finally:
        consumer.close()


def test_transaction_view_shows_state_producer_and_timeline(browser: Session, filled: Filled) -> None:
    open_view(browser, f"{filled.url}/transactions/{TXN_ID}", "table.timeline tbody tr", "the timeline")
    expected = filled.broker.transaction(TXN_ID)
    facts = texts(browser, ".facts")[0]
    assert "CompleteAbort" in facts and str(expected["producer_id"]) in facts
    states = [cells[1] for cells in row_cells(browser, "table.timeline")]
    assert states.index("CompleteCommit") < states.index("CompleteAbort") and "Ongoing" in states
    assert browser.find_all("svg.strip rect")
    shot(browser, "transaction")


def test_actions_create_a_topic_fault_it_clear_it_and_delete_it(browser: Session, filled: Filled) -> None:
    open_view(browser, filled.url + "/", "form.actions input[name='name']", "the create-topic form")
    type_into(browser, "form.actions input[name='name']", "made-in-browser\ue007")
    browser.wait(lambda: browser.find_all("table.topics a[href='/topics/made-in-browser']"), what="the new topic")

    open_view(browser, filled.url + "/faults", "form.inject-fault", "the fault form")
    for name, text in (("api", "Produce"), ("error", "NOT_LEADER_OR_FOLLOWER"), ("count", "1"),
                       ("topic", "made-in-browser\ue007")):
        type_into(browser, f"form.inject-fault input[name='{name}']", text)
    listed = ["Produce", "error", "NOT_LEADER_OR_FOLLOWER", "0"]
    browser.wait(lambda: [cells[1:5] for cells in row_cells(browser, "table.fault-list")] == [listed],
                 what="the fault listed")
    sender = producer(filled.broker.bootstrap_servers)
    sender.produce("made-in-browser", b"retried through the fault")
    sender.flush(TIMEOUT_S)
    browser.wait(lambda: texts(browser, "td.hits") == ["1"], what="the fault's hit counted")
    shot(browser, "faults")
    click(browser, "button.clear-faults")
    browser.wait(lambda: texts(browser, "table.fault-list td.empty") == ["none"], what="no fault left")

    open_view(browser, filled.url + "/topics/made-in-browser", ".delete-topic button", "the delete button")
    click(browser, ".delete-topic button")
    click(browser, ".delete-topic button.danger")
    browser.wait(lambda: urllib.parse.urlsplit(browser.current_url).path == "/", what="back on the cluster view")
    browser.wait(lambda: not browser.find_all("table.topics a[href='/topics/made-in-browser']"), what="the topic gone")
    assert api(f"{filled.url}/v1/topics?filter=made-in-browser")["total"] == 0


def test_reset_offsets_of_an_empty_group(browser: Session, filled: Filled) -> None:
    open_view(browser, f"{filled.url}/groups/{EMPTY_GROUP}", "table.lag tbody tr td.lag", "the empty group's lag")
    assert [cells[2] for cells in row_cells(browser, "table.lag")] == ["2", "2", "2"]
    click(browser, "button.reset-latest")
    browser.wait(lambda: [cells[4] for cells in row_cells(browser, "table.lag")] == ["0", "0", "0"], what="no lag")
    open_view(browser, f"{filled.url}/groups/{GROUP}", "button.reset-earliest", "the live group's reset buttons")
    click(browser, "button.reset-earliest")
    browser.wait(lambda: "member(s): stop them first" in texts(browser, ".reset-offsets .message")[0],
                 what="a group with members refused")


def test_transcript_view_filters_the_timeline(browser: Session, filled: Filled) -> None:
    open_view(browser, filled.url + "/transcript", "table.transcript-list tbody tr td.client-id", "the transcript")
    type_into(browser, "input.filter-api", "Produce")

    def requests() -> set[str]:
        return {cells[5].split(" ")[0] for cells in row_cells(browser, "table.transcript-list")}

    browser.wait(lambda: requests() == {"Produce"}, what="Produce requests only")
    assert "api=Produce" in browser.current_url and "inspector-test" in texts(browser, "td.client-id")
    shot(browser, "transcript")


def test_a_read_only_listener_offers_no_actions(browser: Session) -> None:
    with Broker(control=True, control_read_only=True) as broker:
        broker.create_topic("readonly-topic", 1, 1)
        open_view(browser, broker.control_url + "/", "table.topics a[href='/topics/readonly-topic']", "the topic list")
        assert texts(browser, "form.actions") == [] and "read-only" in texts(browser, "#identity")[0]
        open_view(browser, broker.control_url + "/faults", "table.fault-list", "the fault list")
        assert texts(browser, "form.inject-fault") == []
        open_view(browser, broker.control_url + "/topics/readonly-topic", "table.partitions tbody tr", "the topic")
        assert texts(browser, ".delete-topic") == []


def test_a_token_is_asked_for_and_sent(browser: Session) -> None:
    with Broker(control=True, control_token="s3cret") as broker:
        broker.create_topic("guarded", 1, 1)
        open_view(browser, broker.control_url + "/", "#token-input", "the token form")
        browser.wait(lambda: texts(browser, "#token-form"), what="the token form shown")
        type_into(browser, "#token-input", "s3cret\ue007")
        browser.wait(lambda: browser.find_all("table.topics a[href='/topics/guarded']"),
                     what="the data after the token")
        assert texts(browser, "#token-form") == []


def test_partitions_are_paged_100_at_a_time(browser: Session, filled: Filled) -> None:
    filled.broker.create_topic("wide", 150, 1)
    open_view(browser, f"{filled.url}/topics/wide", "table.partitions tbody tr", "the first page of partitions")
    assert [cells[0] for cells in row_cells(browser, "table.partitions")] == [str(p) for p in range(100)]
    assert texts(browser, ".pager span") == ["1–100 of 150"]
    click(browser, ".pager button:last-child")
    browser.wait(lambda: [c[0] for c in row_cells(browser, "table.partitions")] == [str(p) for p in range(100, 150)],
                 what="the second page")
    assert "poffset=100" in browser.current_url


def test_a_missing_topic_gets_a_notice(browser: Session, filled: Filled) -> None:
    open_view(browser, f"{filled.url}/topics/never-made", "#notice", "the notice")
    browser.wait(lambda: "Not found: no topic 'never-made'" in texts(browser, "#notice")[0], what="a not-found notice")


# ---- hostile data ----


def test_markup_in_the_data_is_shown_as_text_and_never_run(browser: Session, filled: Filled) -> None:
    bootstrap = filled.broker.bootstrap_servers
    filled.broker.create_topic("hostile", 1, 1)
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": HOSTILE, "client.id": HOSTILE})
    txn.init_transactions(TIMEOUT_S)
    txn.begin_transaction()
    for i, payload in enumerate(PAYLOADS):
        txn.produce("hostile", payload.encode(), payload.encode(), headers=[(payload, payload.encode())])
    txn.flush(TIMEOUT_S)
    txn.commit_transaction(TIMEOUT_S)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": HOSTILE, "client.id": HOSTILE,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["hostile"])
        deadline = time.monotonic() + TIMEOUT_S
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.1)
        consumer.commit(offsets=[TopicPartition("hostile", 0, 1)], asynchronous=False)
        views = [
            ("/", "table a[href^='/groups/%3C']", "hostile-cluster"),
            ("/topics/hostile", "table.messages tr.record", "hostile-topic"),
            ("/groups/" + urllib.parse.quote(HOSTILE, safe=""), "table.members .client-id", "hostile-group"),
            ("/transactions/" + urllib.parse.quote(HOSTILE, safe=""), "table.timeline tbody tr", "hostile-transaction"),
            ("/transcript?q=" + urllib.parse.quote("<svg", safe=""), "td.client-id", "hostile-transcript"),
        ]
        for path, ready, name in views:
            open_view(browser, filled.url + path, ready, name)
            time.sleep(0.3)  # a poll or two more: anything that would run has run
            shown = browser.execute("return document.querySelector('main').innerText")
            assert HOSTILE in shown or all(payload in shown for payload in PAYLOADS), (name, shown)
            assert browser.execute("return window.__pwned") is None, name
            assert browser.alert_text() is None, name
            injected = "return document.querySelectorAll('main img, main script, main svg[onload]').length"
            assert browser.execute(injected) == 0, name
            shot(browser, name)
    finally:
        consumer.close()
