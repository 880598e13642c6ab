"""A minimal replica for platform tests: serves /ready after READY_AFTER_S, obeys SIGTERM
after DRAIN_S (or ignores it when IGNORE_SIGTERM=1), exits with EXIT_CODE after EXIT_AFTER_S,
dies of a real segfault after SEGFAULT_AFTER_S. /healthz answers 200 "ok" (each request is
logged as a ``healthz`` event), or, from HEALTHZ_FAIL_AFTER_S on, fails as HEALTHZ_FAIL says:
``503`` (a one-line reason, as a replica whose group session broke) or ``hang`` (no answer for
30 s); HEALTHZ_FAIL_REPLICA (comma-separated replica ids) limits the failure to those replicas,
so a replacement (a new id) stays healthy."""

import argparse
import ctypes
import http.server
import os
import signal
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("--replica-id")
p.add_argument("--metrics-port", type=int)
p.add_argument("--event-log")
p.add_argument("--store")
args = p.parse_args()
started = time.monotonic()
ready_after = float(os.environ.get("READY_AFTER_S", "0.3"))
fail_after = float(os.environ.get("HEALTHZ_FAIL_AFTER_S", "0"))
only = [r for r in os.environ.get("HEALTHZ_FAIL_REPLICA", "").split(",") if r]
may_fail = bool(fail_after) and (not only or args.replica_id in only)
log_lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        if self.path == "/healthz":
            return self.healthz()
        ok = self.path == "/ready" and time.monotonic() - started >= ready_after
        self.send_response(200 if ok else 503)
        self.end_headers()

    def healthz(self):
        failing = may_fail and time.monotonic() - started >= fail_after
        with log_lock, open(args.event_log, "a") as fh:
            fh.write('{"event":"healthz","failing":%s}\n' % ("true" if failing else "false"))
        if failing and os.environ.get("HEALTHZ_FAIL", "503") == "hang":
            time.sleep(30)
            return
        body = (f"{args.replica_id}: not live: group session broken (test)\n" if failing
                else "ok\n").encode()
        self.send_response(503 if failing else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", args.metrics_port), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
done = threading.Event()


def on_term(signum, frame):
    with open(args.event_log, "a") as fh:
        fh.write('{"event":"sigterm"}\n')
    time.sleep(float(os.environ.get("DRAIN_S", "0")))
    done.set()


if os.environ.get("IGNORE_SIGTERM") == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, on_term)


def segfault():
    ctypes.string_at(0)  # reads address 0: SIGSEGV, as a native library's bug would


exit_after = float(os.environ.get("EXIT_AFTER_S", "0"))
segfault_after = float(os.environ.get("SEGFAULT_AFTER_S", "0"))
while not done.wait(0.05):
    if exit_after and time.monotonic() - started > exit_after:
        os._exit(int(os.environ.get("EXIT_CODE", "3")))
    if segfault_after and time.monotonic() - started > segfault_after:
        segfault()
