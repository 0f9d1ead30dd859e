//===- PythonMessage.h - error text Python can decode -----------*- C++ -*-===//
//
// Shared by the serving module (_mla_fp8) and the compiler module
// (_mla_fp8_compiler); plain C++ and pybind11 only.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_PYTHON_PYTHONMESSAGE_H
#define MLA_FP8_PYTHON_PYTHONMESSAGE_H

#include <pybind11/pybind11.h>

#include <string>

namespace mla_fp8_python {

/// `message` with every byte that is not valid UTF-8 written as \xNN (as
/// Python's "backslashreplace" does), and NUL as \x00: a path from the file
/// system or a string from a bundle may hold any bytes, and pybind turns a
/// message it cannot decode into an empty one and cuts one at a NUL.
inline std::string toPythonMessage(const std::string &message) {
  std::string escaped;
  escaped.reserve(message.size());
  for (char c : message) {
    if (c == '\0')
      escaped += "\\x00";
    else
      escaped += c;
  }
  return pybind11::bytes(escaped)
      .attr("decode")("utf-8", "backslashreplace")
      .cast<std::string>();
}

} // namespace mla_fp8_python

#endif // MLA_FP8_PYTHON_PYTHONMESSAGE_H
