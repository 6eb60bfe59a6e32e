"""Socket.IO packets the page never sends (bad JSON, an unknown type, an event without a
name, a 5,000-digit number, a binary placeholder naming no attachment) are dropped with at
most one log line a minute, never a traceback each, and the connection goes on working."""

from __future__ import annotations

import logging
import time

import pytest
import requests
from conftest import Writer, write_setup

from cyoa.web import realtime
from tests.web.test_workers import AppProcess

BIG = "9" * 5000
MALFORMED = {
    "an unfinished list": ["42["],
    "an unfinished object": ["42{"],
    "an unknown packet type": ["49"],
    "an event without a name": ["42[]"],
    "an event that is an object": ['42{"a":1}'],
    "an id with no event": ["425"],
    "a 5,000-digit id": ["42" + BIG + '["join",{}]'],
    "a 5,000-digit number": [f'42["join",{BIG}]'],
    "a placeholder naming no attachment": [
        '451-["action",{"_placeholder":true,"num":7}]',
        b"\x01\x02",
    ],
    "a placeholder with a text index": [
        '451-["action",{"_placeholder":true,"num":"x"}]',
        b"\x01",
    ],
}


@pytest.mark.parametrize("packets", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_packet_is_dropped_with_one_line_and_the_connection_goes_on(
    app, caplog, packets
):
    caplog.set_level(logging.INFO)
    writer = Writer(app)
    server = writer.io.socketio.server
    for _ in range(50):
        for packet in packets:
            server._handle_eio_message(writer.io.eio_sid, packet)
    dropped = [r for r in caplog.records if "unreadable Socket.IO packet" in r.getMessage()]
    assert len(dropped) == 1 and dropped[0].exc_info is None
    assert len(dropped[0].getMessage()) < 400
    assert not any(r.exc_info for r in caplog.records)
    ack = writer.act("line_submitted", {"text": "The harbour froze over in a single night."})
    assert ack["ok"], ack


def test_dropped_packets_are_counted_in_one_line_a_minute():
    now = [0.0]
    dropped = realtime.DroppedPackets(every=60, clock=lambda: now[0])
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("cyoa.web.realtime")
    logger.addHandler(handler)
    try:
        for second in range(0, 150, 1):
            now[0] = float(second)
            dropped.drop(ValueError("Integer is too large"))
    finally:
        logger.removeHandler(handler)
    assert [line.split(" unreadable")[0] for line in lines] == [
        "Dropped 1",
        "Dropped 60",
        "Dropped 60",
    ]


# Against a real server, over Engine.IO's long-polling transport as a script would send.


def polling(url: str, sid: str | None = None) -> str:
    query = f"{url}/socket.io/?EIO=4&transport=polling&t={time.monotonic_ns()}"
    return query + (f"&sid={sid}" if sid else "")


def test_a_real_server_logs_a_flood_of_malformed_packets_in_one_line_and_still_answers(
    tmp_path,
):
    worker = AppProcess(tmp_path, write_setup(tmp_path), "", "solo")
    try:
        worker.wait_ready()
        http = requests.Session()
        handshake = http.get(polling(worker.url), timeout=10).text
        sid = handshake.split('"sid":"')[1].split('"')[0]
        assert http.post(polling(worker.url, sid), data="40", timeout=10).ok
        assert http.get(polling(worker.url, sid), timeout=10).text.startswith("40")
        before = worker.log_path.read_text()
        flood = ["42[", "42{", "49", "42[]", f'42["join",{BIG}]'] * 100
        flood += ['451-["action",{"_placeholder":true,"num":7}]', "bAQI="]
        for start in range(0, len(flood), 16):  # Engine.IO takes 16 packets a request
            body = "\x1e".join(flood[start : start + 16])
            assert http.post(polling(worker.url, sid), data=body, timeout=10).ok
        logged = worker.log_path.read_text()[len(before) :].splitlines()
        # Leaving out the web server's line per request, which any request gets.
        app_lines = [line for line in logged if " werkzeug: " not in line]
        assert len(app_lines) == 1 and "Dropped 1 unreadable" in app_lines[0], logged
        http.post(polling(worker.url, sid), data='421["join",{"experiment":"fake-ab"}]')
        answer = http.get(polling(worker.url, sid), timeout=10).text
        assert answer.startswith("431[") and "No story found for this browser" in answer
    finally:
        worker.stop()
