"""Runs one query-set library through its C ABI (cffi, ABI mode) in a child
process started by test_runtime.py (which preloads the ASan runtime).

Usage: python driver.py SPEC.json   -- writes the result JSON to spec["result"].
"""
import json
import signal
import sys
import threading

import cffi

# The ABI declarations are the ones the gsqlc package itself loads libraries
# with: one definition of the C ABI on the Python side.
from gsqlc.runtime.c_interface import abi_cdef  # noqa: E402

CDEF = abi_cdef()


def s(ffi, p):
    return ffi.string(p).decode("utf-8", "replace")


def main():
    spec = json.load(open(sys.argv[1]))
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    lib = ffi.dlopen(spec["lib"])
    res = {"setup_errors": []}

    def configure(run, suffix=""):
        def check(rc, what):
            if rc != 0:
                res["setup_errors"].append([what, s(ffi, lib.gsqlc_error(run))])

        opts = spec.get("options", {})
        # a dict, or a list of [key, value] pairs (the same key more than once)
        for k, v in (opts.items() if isinstance(opts, dict) else opts):
            check(lib.gsqlc_set_option(run, k.encode(), v.encode()), "option " + k)
        for k, v in spec.get("params", {}).items():
            check(lib.gsqlc_set_param(run, k.encode(), v.encode()), "param " + k)
        for iface, uri in spec.get("binds", []):
            check(lib.gsqlc_bind_source(run, iface.encode(), uri.encode()), "bind " + iface)
        for query, fmt, path in spec.get("sinks", []):
            check(lib.gsqlc_add_sink(run, query.encode(), fmt.encode(),
                                     (path + suffix).encode() if path else ffi.NULL),
                  "sink " + query)
        return run

    run = configure(lib.gsqlc_create())
    # runs of the same library at once, each with its own sinks (path.N)
    twins = [configure(lib.gsqlc_create(), f".{k}") for k in range(1, spec.get("twins", 0) + 1)]
    res["cancel_null"] = lib.gsqlc_cancel(ffi.NULL)
    if spec.get("cancel_first"):
        res["cancel"] = lib.gsqlc_cancel(run)
    if spec.get("run", True):
        # the library installs no signal handler: as gsqlc's CLI does, run it
        # on a worker thread and turn SIGINT/SIGTERM into gsqlc_cancel
        def cancel(sig, frame):
            lib.gsqlc_cancel(run)
        signal.signal(signal.SIGINT, cancel)
        signal.signal(signal.SIGTERM, cancel)
        res["twin_rc"] = [None] * len(twins)
        workers = [threading.Thread(target=lambda: res.__setitem__("rc", lib.gsqlc_run(run)))]
        for k, t in enumerate(twins):
            workers.append(threading.Thread(
                target=lambda k=k, t=t: res["twin_rc"].__setitem__(k, lib.gsqlc_run(t))))
        for w in workers:
            w.start()
        for w in workers:
            while w.is_alive():
                w.join(0.05)
    res["error"] = s(ffi, lib.gsqlc_error(run))
    res["report"] = s(ffi, lib.gsqlc_report(run))
    res["stats"] = s(ffi, lib.gsqlc_stats_json(run))
    res["twin_stats"] = [s(ffi, lib.gsqlc_stats_json(t)) for t in twins]
    if spec.get("run", True):
        res["rc2"] = lib.gsqlc_run(run)  # a second run is refused
        res["error2"] = s(ffi, lib.gsqlc_error(run))
    lib.gsqlc_destroy(run)
    for t in twins:
        lib.gsqlc_destroy(t)
    sys.stdout.flush()
    with open(spec["result"], "w") as f:
        json.dump(res, f)

if __name__ == "__main__":
    main()
