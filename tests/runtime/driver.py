"""Runs one query-set library through its C ABI (cffi, ABI mode) in a child
process started by test_runtime.py (which preloads the ASan runtime).

Usage: python driver.py SPEC.json   -- writes the result JSON to spec["result"].
"""
import json
import sys

import cffi

# The ABI declarations are the ones the gsqlc package itself loads libraries
# with: one definition of the C ABI on the Python side.
from gsqlc.runner import ABI_CDEF as CDEF  # noqa: E402


def s(ffi, p):
    return ffi.string(p).decode("utf-8", "replace")


def main():
    spec = json.load(open(sys.argv[1]))
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    lib = ffi.dlopen(spec["lib"])
    run = lib.gsqlc_create()
    res = {"setup_errors": []}

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
                                 path.encode() if path else ffi.NULL), "sink " + query)
    if spec.get("run", True):
        res["rc"] = lib.gsqlc_run(run)
    res["error"] = s(ffi, lib.gsqlc_error(run))
    res["report"] = s(ffi, lib.gsqlc_report(run))
    res["stats"] = s(ffi, lib.gsqlc_stats_json(run))
    if spec.get("run", True):
        res["rc2"] = lib.gsqlc_run(run)  # a second run is refused
        res["error2"] = s(ffi, lib.gsqlc_error(run))
    lib.gsqlc_destroy(run)
    sys.stdout.flush()
    with open(spec["result"], "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
