// gsqlc._native -- the package's own extension: query-independent native
// code shared by the Python API (the packet reader of the C runtime, the
// libpcap in use).
#include <pcap/pcap.h>
#include <pybind11/pybind11.h>

namespace py = pybind11;

PYBIND11_MODULE(_native, m)
{
    m.doc() = "gsqlc native helpers";
    m.def("pcap_version", []() { return std::string(pcap_lib_version()); },
          "the version string of the libpcap gsqlc links");
}
