//===- ServingModule.cpp - the _mla_fp8 Python extension ------------------===//
//
// The serving half of the native part of mla_fp8: formats, the reference,
// bundles and their kernels on the emulator. It links
// MLAFP8EmbeddingRuntime and Reference, never MLIR, so `import mla_fp8` and
// the drop-in call do not map libMLIR; the compiler is _mla_fp8_compiler
// (CompilerModule.cpp), loaded by mla_fp8.aot and mla_fp8.ir on first use.
//
// A thin layer: numpy arrays of raw bits, text and bytes in and out. Argument
// checking with messages that name the Python argument happens in the
// mla_fp8 package; this module trusts its dtypes and shapes, re-checking only
// what would otherwise corrupt memory. Only plain C++ headers are included
// here (Reference/, Runtime/KernelTable.h, Embedding/): this file is built
// with exceptions and RTTI, the LLVM-typed libraries without.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Embedding/Runtime.h"
#include "mla-fp8/Reference/Formats.h"
#include "mla-fp8/Reference/PrequantBmm.h"
#include "mla-fp8/Runtime/Limits.h"

#include "DescriptionDict.h"
#include "PythonMessage.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

namespace py = pybind11;
using namespace mlir::mlafp8;
using mla_fp8_python::addDescription;
using mla_fp8_python::toPythonMessage;

namespace {

template <typename T>
using CArray = py::array_t<T, py::array::c_style | py::array::forcecast>;

FP8Format toFormat(const std::string &name) {
  std::optional<FP8Format> format = parseFP8Format(name);
  if (!format)
    throw py::value_error("unknown fp8 format '" + name +
                          "'; expected f8E4M3FNUZ, f8E4M3FN, f8E5M2FNUZ or "
                          "f8E5M2");
  return *format;
}

OutType toType(const std::string &name, const char *what) {
  if (name == "bf16")
    return OutType::BF16;
  if (name == "f16")
    return OutType::F16;
  throw py::value_error(std::string(what) + " must be 'bf16' or 'f16', got '" +
                        name + "'");
}

/// Applies `fn` element-wise from `in` to a new array of the same shape.
template <typename Out, typename In, typename Fn>
py::array_t<Out> mapArray(const CArray<In> &in, Fn fn) {
  py::array_t<Out> out(
      std::vector<py::ssize_t>(in.shape(), in.shape() + in.ndim()));
  const In *src = in.data();
  Out *dst = out.mutable_data();
  py::ssize_t count = in.size();
  {
    py::gil_scoped_release release;
    for (py::ssize_t i = 0; i < count; ++i)
      dst[i] = fn(src[i]);
  }
  return out;
}

void requireDtype(const py::array &a, char kind, py::ssize_t itemsize,
                  const char *what) {
  if (a.dtype().kind() != kind || a.itemsize() != itemsize)
    throw py::type_error(std::string(what) + " has the wrong dtype");
}

py::dict kernelToDict(const runtime::KernelEntry &e, size_t chipIndex,
                      size_t kernelIndex) {
  py::dict d;
  addDescription(d, e);
  d["symbol"] = e.symbol;
  d["projection"] = e.projection;
  d["min_rows"] = e.minRows;
  d["max_rows"] = e.maxRows;
  d["block_m"] = e.blockM;
  d["workgroup_size"] = py::make_tuple(e.workgroupSize[0], e.workgroupSize[1],
                                       e.workgroupSize[2]);
  d["kernarg_size"] = e.kernargSize;
  d["kernarg_align"] = e.kernargAlign;
  d["lds_bytes"] = e.ldsBytes;
  d["scratch_bytes"] = e.scratchBytes;
  d["workspace_bytes_per_block"] = e.workspaceBytesPerBlock;
  py::list args;
  for (const runtime::KernelArg &a : e.args) {
    py::dict arg;
    arg["name"] = a.name;
    arg["offset"] = a.offset;
    arg["size"] = a.size;
    arg["kind"] = a.kind;
    arg["meaning"] = a.meaning;
    arg["hidden"] = a.isHidden();
    args.append(arg);
  }
  d["args"] = args;
  d["key"] = py::make_tuple(chipIndex, kernelIndex);
  return d;
}

/// The bundle as Python sees it: lookups give dicts, code objects bytes.
class PyBundle {
public:
  explicit PyBundle(const std::string &dir) {
    std::string error;
    bundle = embedding::loadBundle(dir, error);
    if (!bundle)
      throw py::value_error(toPythonMessage(error));
  }

  std::optional<py::dict>
  findKernel(const std::string &chip, int64_t n, int64_t k, int64_t m,
             int64_t batch, const std::string &outType, const std::string &wScale,
             int64_t groupSize, const std::string &inType, bool hasBias) const {
    runtime::KernelQuery q;
    q.chip = chip;
    q.n = n;
    q.k = k;
    q.m = m;
    q.batch = batch;
    q.outType = outType;
    std::optional<kernel_abi::WeightScaleMode> mode =
        kernel_abi::parseWeightScaleMode(wScale);
    if (!mode)
      return std::nullopt;
    q.weightScale = *mode;
    q.groupSize = groupSize;
    q.inType = inType;
    q.hasBias = hasBias;
    const runtime::KernelEntry *e = bundle->findKernel(q);
    if (!e)
      return std::nullopt;
    return describe(*e);
  }

  py::list kernels() const {
    py::list list;
    for (const runtime::LoadedChip &c : bundle->chips)
      for (const runtime::KernelEntry &e : c.kernels)
        list.append(describe(e));
    return list;
  }

  py::bytes codeObject(size_t chipIndex) const {
    if (chipIndex >= bundle->chips.size())
      throw py::index_error("chip index out of range");
    const std::string &bytes = *bundle->chips[chipIndex].codeObject;
    return py::bytes(bytes.data(), bytes.size());
  }

  py::list chips() const {
    py::list list;
    for (const runtime::LoadedChip &c : bundle->chips) {
      py::dict d;
      d["chip"] = c.chip;
      d["code_object_file"] = c.codeObjectFile;
      d["sha256"] = c.sha256;
      d["num_kernels"] = c.kernels.size();
      list.append(d);
    }
    return list;
  }

  py::tuple grid(size_t chipIndex, size_t kernelIndex, int64_t m,
                 int64_t b) const {
    const runtime::KernelEntry &e =
        bundle->chips.at(chipIndex).kernels.at(kernelIndex);
    // Every launcher asks for the grid first: the geometry is checked against
    // the kernel's metadata here, whatever the Python side checked before.
    if (std::string reason = e.checkLaunch(m, b); !reason.empty())
      throw py::value_error(e.symbol + ": " + reason);
    std::array<uint64_t, 3> g = e.getGrid(m, b);
    return py::make_tuple(g[0], g[1], g[2]);
  }

  /// The split-K workspace bytes of a launch for `m` tokens and `b` batches,
  /// as the kernel ABI gives them (0: none).
  uint64_t workspaceBytes(size_t chipIndex, size_t kernelIndex, int64_t m,
                          int64_t b) const {
    const runtime::KernelEntry &e =
        bundle->chips.at(chipIndex).kernels.at(kernelIndex);
    uint64_t bytes = e.getWorkspaceBytes(m, b);
    if (bytes == std::numeric_limits<uint64_t>::max())
      throw py::value_error(
          e.symbol + ": the split-K workspace for M = " + std::to_string(m) +
          ", B = " + std::to_string(b) + " does not fit in 64 bits");
    return bytes;
  }

  /// Runs kernel (chipIndex, kernelIndex) on the emulator. `x` is a
  /// (B, M, K) view and `y` a (B, M, N) view of uint16 bits, any
  /// non-negative strides with the last one 1: the strides passed to the
  /// kernel are the arrays' own, so no call can reach outside them.
  uint64_t runEmulated(size_t chipIndex, size_t kernelIndex, const py::array &x,
                       const py::array &w, const py::array &wScale,
                       const std::optional<py::array> &bias, py::array y,
                       unsigned threads) {
    const runtime::KernelEntry &e =
        bundle->chips.at(chipIndex).kernels.at(kernelIndex);
    requireDtype(x, 'u', 2, "x");
    requireDtype(w, 'u', 1, "w");
    requireDtype(wScale, 'f', 4, "w_scale");
    requireDtype(y, 'u', 2, "y");
    if (x.ndim() != 3 || w.ndim() != 3 || y.ndim() != 3)
      throw py::value_error("x, w and y must have 3 dimensions");
    int64_t b = x.shape(0), m = x.shape(1);
    if (x.shape(2) != e.k || w.shape(0) != b || w.shape(1) != e.n ||
        w.shape(2) != e.k || y.shape(0) != b || y.shape(1) != m ||
        y.shape(2) != e.n)
      throw py::value_error("x, w and y do not match the kernel's shape");
    if (!(w.flags() & py::array::c_style))
      throw py::value_error("w must be C-contiguous");
    if (wScale.size() !=
            (e.weightScale == kernel_abi::WeightScaleMode::PerBatch ? b : 1) ||
        !(wScale.flags() & py::array::c_style))
      throw py::value_error("w_scale has the wrong size");
    if (!y.writeable())
      throw py::value_error("y is read-only");
    // The package names the argument at fault first; these keep the native
    // call itself within what the emulator and the kernels can take.
    if (b > runtime::kEmulatorMaxBatch || m > runtime::kEmulatorMaxM ||
        e.n > runtime::kEmulatorMaxDim || e.k > runtime::kEmulatorMaxDim ||
        runtime::getEmulatorHostBytes(
            b, m, e.n, e.k, int64_t(e.getWorkspaceBytes(m, b))) >
            runtime::kEmulatorMaxHostBytes)
      throw py::value_error("x, w and y are larger than the emulator runs "
                            "(docs/limits.md)");
    if (threads > runtime::kEmulatorMaxThreads)
      throw py::value_error("threads: at most " +
                            std::to_string(runtime::kEmulatorMaxThreads));
    const uint16_t *biasData = nullptr;
    if (bias) {
      requireDtype(*bias, 'u', 2, "bias");
      if (bias->size() != b * e.n || !(bias->flags() & py::array::c_style))
        throw py::value_error("bias must be a contiguous (B, N) array");
      biasData = static_cast<const uint16_t *>(bias->data());
    }
    auto strides = [](const py::array &a, int64_t cols, const char *what) {
      for (int i = 0; i < 3; ++i)
        if (a.strides(i) < 0 || a.strides(i) % 2)
          throw py::value_error(std::string(what) +
                                " has a negative or odd stride");
      if (a.strides(2) != 2 && cols > 1)
        throw py::value_error(std::string(what) +
                              ": the last stride must be 1 element");
      return std::pair<int64_t, int64_t>(a.strides(0) / 2, a.strides(1) / 2);
    };
    // Nothing to compute: an empty array's strides are whatever numpy made
    // them, and nothing reads them.
    if (b == 0 || m == 0)
      return 0;
    runtime::PrequantBmmCall call;
    call.batch = b;
    call.m = m;
    std::tie(call.xStrideB, call.xStrideM) = strides(x, e.k, "x");
    std::tie(call.yStrideB, call.yStrideM) = strides(y, e.n, "y");
    if (doRowsOverlap(call.yStrideB, b, call.yStrideM, m, e.n))
      throw py::value_error("y strides make distinct rows overlap");
    if (std::string reason = e.checkLaunch(m, b); !reason.empty())
      throw py::value_error(e.symbol + ": " + reason);
    call.x = static_cast<const uint16_t *>(x.data());
    call.w = static_cast<const uint8_t *>(w.data());
    call.wScale = static_cast<const float *>(wScale.data());
    call.bias = biasData;
    call.y = static_cast<uint16_t *>(y.mutable_data());
    if (!emulator)
      emulator = std::make_unique<embedding::BundleEmulator>(bundle);
    uint64_t instructions = 0;
    std::string error;
    bool ok;
    {
      py::gil_scoped_release release;
      ok = emulator->launch(e, call, threads, instructions, error);
    }
    if (!ok)
      throw std::runtime_error(error);
    return instructions;
  }

  std::shared_ptr<const runtime::LoadedBundle> bundle;

private:
  std::unique_ptr<embedding::BundleEmulator> emulator;

  py::dict describe(const runtime::KernelEntry &e) const {
    for (size_t c = 0; c < bundle->chips.size(); ++c) {
      const std::vector<runtime::KernelEntry> &ks = bundle->chips[c].kernels;
      if (!ks.empty() && &e >= ks.data() && &e < ks.data() + ks.size())
        return kernelToDict(e, c, &e - ks.data());
    }
    throw std::logic_error("kernel entry outside its bundle");
  }
};

void callReferencePrequantBmm(py::array x, int64_t xStrideB, int64_t xStrideM,
                              int64_t batch, int64_t m, int64_t n, int64_t k,
                              const CArray<uint8_t> &w, const CArray<float> &ws,
                              bool perBatch, std::optional<py::array> bias,
                              py::array y, int64_t yStrideB, int64_t yStrideM,
                              int64_t groupSize, const std::string &format,
                              const std::string &inType,
                              const std::string &outType,
                              std::optional<py::array> accOverflow) {
  requireDtype(x, 'u', 2, "x");
  requireDtype(y, 'u', 2, "y");
  if (!y.writeable())
    throw py::value_error("y is read-only");
  if (w.size() != batch * n * k)
    throw py::value_error("w has the wrong size");
  if (ws.size() != (perBatch ? batch : 1))
    throw py::value_error("w_scale has the wrong size");
  PrequantBmmArgs args;
  args.B = batch;
  args.M = m;
  args.N = n;
  args.K = k;
  args.groupSize = groupSize;
  args.format = toFormat(format);
  args.inputType = toType(inType, "in_type");
  args.outType = toType(outType, "out_type");
  args.x = static_cast<const uint16_t *>(x.data());
  args.xStrideB = xStrideB;
  args.xStrideM = xStrideM;
  args.w = w.data();
  args.weightDescale = ws.data();
  args.perBatchDescale = perBatch;
  if (bias) {
    requireDtype(*bias, 'u', 2, "bias");
    if (bias->size() != batch * n || !(bias->flags() & py::array::c_style))
      throw py::value_error("bias must be a contiguous (B, N) array");
    args.bias = static_cast<const uint16_t *>(bias->data());
  }
  args.y = static_cast<uint16_t *>(y.mutable_data());
  args.yStrideB = yStrideB;
  args.yStrideM = yStrideM;
  uint8_t *overflow = nullptr;
  if (accOverflow) {
    requireDtype(*accOverflow, 'u', 1, "acc_overflow");
    if (accOverflow->size() != batch * m * n ||
        !(accOverflow->flags() & py::array::c_style) ||
        !accOverflow->writeable())
      throw py::value_error(
          "acc_overflow must be a writable contiguous (B, M, N) array");
    overflow = static_cast<uint8_t *>(accOverflow->mutable_data());
  }
  std::string error;
  bool ok;
  {
    py::gil_scoped_release release;
    ok = mlir::mlafp8::referencePrequantBmm(args, &error, overflow);
  }
  if (!ok)
    throw py::value_error(error);
}

} // namespace

PYBIND11_MODULE(_mla_fp8, m) {
  m.doc() = "Native serving part of mla_fp8 (no MLIR); use the mla_fp8 "
            "package instead.";

  m.def("fp8_max", [](const std::string &f) { return getFP8Max(toFormat(f)); });
  m.def("float_to_bf16", [](const CArray<float> &a) {
    return mapArray<uint16_t>(a, floatToBF16);
  });
  m.def("double_to_bf16", [](const CArray<double> &a) {
    return mapArray<uint16_t>(a, doubleToBF16);
  });
  m.def("bf16_to_float", [](const CArray<uint16_t> &a) {
    return mapArray<float>(a, bf16ToFloat);
  });
  m.def("float_to_f16", [](const CArray<float> &a) {
    return mapArray<uint16_t>(a, floatToF16);
  });
  m.def("double_to_f16", [](const CArray<double> &a) {
    return mapArray<uint16_t>(a, doubleToF16);
  });
  m.def("f16_to_float", [](const CArray<uint16_t> &a) {
    return mapArray<float>(a, f16ToFloat);
  });
  m.def("encode_fp8", [](const CArray<float> &a, const std::string &f,
                         bool saturate) {
    FP8Format format = toFormat(f);
    FP8Overflow overflow = saturate ? FP8Overflow::Saturate : FP8Overflow::NaN;
    return mapArray<uint8_t>(
        a, [&](float v) { return encodeFP8(v, format, overflow); });
  });
  m.def("decode_fp8", [](const CArray<uint8_t> &a, const std::string &f) {
    FP8Format format = toFormat(f);
    return mapArray<float>(a, [&](uint8_t v) { return decodeFP8(v, format); });
  });

  m.def("quantize_weights",
        [](const CArray<float> &w, const std::string &f, int64_t batch) {
          FP8Format format = toFormat(f);
          py::array_t<uint8_t> q(
              std::vector<py::ssize_t>(w.shape(), w.shape() + w.ndim()));
          py::array_t<float> descales(std::max<int64_t>(batch, 1));
          if (batch > 0) {
            int64_t perBatch = batch ? w.size() / batch : 0;
            py::gil_scoped_release release;
            quantizeWeightsPerBatch(w.data(), batch, perBatch, format,
                                    q.mutable_data(), descales.mutable_data());
          } else {
            py::gil_scoped_release release;
            descales.mutable_data()[0] =
                quantizeWeights(w.data(), w.size(), format, q.mutable_data());
          }
          return py::make_tuple(q, descales);
        });
  m.def("reencode_e4m3fn_to_fnuz", [](const CArray<uint8_t> &bits) {
    py::array_t<uint8_t> out(
        std::vector<py::ssize_t>(bits.shape(), bits.shape() + bits.ndim()));
    float factor =
        reencodeE4M3FNToFNUZ(bits.data(), bits.size(), out.mutable_data());
    return py::make_tuple(out, factor);
  });
  m.def("reference_prequant_bmm", &callReferencePrequantBmm);
  m.def("rows_overlap", &doRowsOverlap,
        "Whether distinct (b, m) rows of n elements at these strides overlap");
  m.def(
      "chips",
      [] {
        py::list chips;
        for (const embedding::ChipSummary &c : embedding::listChips()) {
          py::dict d;
          d["name"] = c.name;
          d["marketing_names"] = c.marketingNames;
          d["architecture"] = c.architecture;
          d["fp8_e4m3_type"] = c.fp8E4M3Type;
          d["fp8_e5m2_type"] = c.fp8E5M2Type;
          d["wave_size"] = c.waveSize;
          d["lds_bytes_per_workgroup"] = c.ldsBytesPerWorkgroup;
          d["num_cus"] = c.numCUs;
          d["mfmas"] = c.mfmas;
          chips.append(d);
        }
        return chips;
      },
      "The chip table: one dict per supported chip");
  m.def(
      "loader_facts",
      [] {
        embedding::LoaderFacts facts = embedding::getLoaderFacts();
        py::list args, mfmas;
        for (const embedding::KernelArgSummary &a : facts.args)
          args.append(py::make_tuple(a.name, a.offset, a.size, a.valueKind));
        for (const embedding::MfmaSummary &m : facts.mfmas)
          mfmas.append(py::make_tuple(m.shape, m.mnemonic, m.m, m.n));
        py::dict constants;
        for (const auto &[name, value] : facts.constants)
          constants[py::str(name)] = value;
        return py::make_tuple(args, mfmas, constants);
      },
      "The kernel ABI's arguments, the MFMA records and the loader's "
      "bounds, for checking the package's pure-Python loader against them");
  m.def("limits", [] {
    py::dict d;
    d["kernel_max_elements"] = runtime::kKernelMaxElements;
    d["max_grid_work_items"] = runtime::kMaxGridWorkItems;
    d["emulator_max_batch"] = runtime::kEmulatorMaxBatch;
    d["emulator_max_m"] = runtime::kEmulatorMaxM;
    d["emulator_max_dim"] = runtime::kEmulatorMaxDim;
    d["emulator_max_host_bytes"] = runtime::kEmulatorMaxHostBytes;
    d["emulator_x_bytes_per_element"] = runtime::kEmulatorXBytesPerElement;
    d["emulator_w_bytes_per_element"] = runtime::kEmulatorWBytesPerElement;
    d["emulator_y_bytes_per_element"] = runtime::kEmulatorYBytesPerElement;
    d["emulator_max_threads"] = runtime::kEmulatorMaxThreads;
    return d;
  });

  py::class_<PyBundle>(m, "Bundle")
      .def(py::init<const std::string &>())
      .def_property_readonly(
          "schema_version",
          [](const PyBundle &b) { return b.bundle->schemaVersion; })
      .def_property_readonly(
          "compiler_version",
          [](const PyBundle &b) { return b.bundle->compilerVersion; })
      .def_property_readonly("model",
                             [](const PyBundle &b) { return b.bundle->model; })
      .def_property_readonly("max_m",
                             [](const PyBundle &b) { return b.bundle->maxM; })
      .def("chips", &PyBundle::chips)
      .def("kernels", &PyBundle::kernels)
      .def("find_kernel", &PyBundle::findKernel)
      .def("code_object", &PyBundle::codeObject)
      .def("grid", &PyBundle::grid)
      .def("workspace_bytes", &PyBundle::workspaceBytes)
      .def("run_emulated", &PyBundle::runEmulated);
}
