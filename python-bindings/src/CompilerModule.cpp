//===- CompilerModule.cpp - the _mla_fp8_compiler Python extension --------===//
//
// The compiler half of the native part of mla_fp8: IR text through the
// project's passes, compile_spec and generate_bundle. It links
// MLAFP8Embedding and with it MLIR; mla_fp8.aot and mla_fp8.ir import it, so
// a process maps libMLIR only once it asks for the compiler. Like
// ServingModule.cpp it includes plain C++ headers only (Embedding/Compiler.h):
// it is built with exceptions and RTTI, the LLVM-typed libraries without.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Embedding/Compiler.h"

#include "DescriptionDict.h"
#include "PythonMessage.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace py = pybind11;
using namespace mlir::mlafp8;
using mla_fp8_python::addDescription;
using mla_fp8_python::toPythonMessage;

namespace {

py::str checkedText(const embedding::TextResult &result) {
  if (!result.ok)
    throw py::value_error(result.text);
  return result.text;
}

} // namespace

PYBIND11_MODULE(_mla_fp8_compiler, m) {
  m.doc() = "Native compiler part of mla_fp8 (links MLIR); use mla_fp8.aot "
            "and mla_fp8.ir instead.";

  m.def(
      "parse_and_print",
      [](const std::string &ir, bool generic) {
        return checkedText(embedding::parseAndPrint(ir, generic));
      },
      py::arg("ir"), py::arg("generic") = false);
  m.def(
      "run_pipeline",
      [](const std::string &ir, const std::string &pipeline, bool generic) {
        return checkedText(embedding::runPipeline(ir, pipeline, generic));
      },
      py::arg("ir"), py::arg("pipeline"), py::arg("generic") = false);

  m.def("compiled_group_count", &embedding::compiledGroupCount,
        "Kernel groups this process has lowered (a counter inside the "
        "compiler)");
  m.def("generate_bundle", [](const py::dict &o) {
    embedding::GenerateOptions options;
    KernelSetRequest &kernels = options.kernels;
    kernels.model = o["model"].cast<std::string>();
    // 0 keeps the preset's dimension (mla_fp8.generate_bundle's contract).
    auto dimension = [&](const char *key, std::optional<int64_t> &field) {
      if (int64_t value = o[key].cast<int64_t>())
        field = value;
    };
    dimension("heads", kernels.heads);
    dimension("kv_lora_rank", kernels.kvLoraRank);
    dimension("qk_nope_head_dim", kernels.qkNopeHeadDim);
    dimension("v_head_dim", kernels.vHeadDim);
    kernels.tp = o["tp"].cast<std::vector<int64_t>>();
    kernels.maxM = o["max_m"].cast<int64_t>();
    kernels.chips = o["chips"].cast<std::vector<std::string>>();
    kernels.weightScale = o["weight_scale"].cast<std::string>();
    kernels.outType = o["out_type"].cast<std::string>();
    kernels.inTypes = o["in_types"].cast<std::vector<std::string>>();
    kernels.codeObjectVersion = o["code_object_version"].cast<int64_t>();
    kernels.groupSize = o["group_size"].cast<int64_t>();
    kernels.bias = o["bias"].cast<bool>();
    kernels.tiles = o["tiles"].cast<std::vector<std::string>>();
    options.outputDir = o["output_dir"].cast<std::string>();
    options.force = o["force"].cast<bool>();
    options.cacheDir = o["cache_dir"].cast<std::string>();
    options.jobs = o["jobs"].cast<unsigned>();
    embedding::GenerateResult r;
    {
      py::gil_scoped_release release;
      r = embedding::generateBundle(options);
    }
    if (!r.ok)
      throw py::value_error(toPythonMessage(r.error));
    py::list chips;
    for (const embedding::GeneratedChip &c : r.chips) {
      py::dict d;
      d["chip"] = c.chip;
      d["symbols"] = c.symbols;
      d["code_object_bytes"] = c.codeObjectBytes;
      d["sha256"] = c.sha256;
      d["from_cache"] = c.fromCache;
      chips.append(d);
    }
    py::dict result;
    result["chips"] = chips;
    result["manifest"] = r.manifest;
    result["bytes_written"] = r.bytesWritten;
    return result;
  });
  m.def("compile_spec", [](const py::dict &o) {
    embedding::CompileSpecOptions options;
    kernel_abi::KernelDescription &kernel = options.kernel;
    kernel.n = o["n"].cast<int64_t>();
    kernel.k = o["k"].cast<int64_t>();
    kernel.chip = o["chip"].cast<std::string>();
    kernel.groupSize = o["group_size"].cast<int64_t>();
    kernel.inType = o["in_type"].cast<std::string>();
    kernel.outType = o["out_type"].cast<std::string>();
    std::optional<kernel_abi::WeightScaleMode> weightScale =
        kernel_abi::parseWeightScaleMode(o["weight_scale"].cast<std::string>());
    if (!weightScale)
      throw py::value_error("weight_scale must be per_tensor or per_batch");
    kernel.weightScale = *weightScale;
    kernel.hasBias = o["bias"].cast<bool>();
    options.projection = o["projection"].cast<std::string>();
    options.batches = o["batches"].cast<std::vector<int64_t>>();
    options.maxM = o["max_m"].cast<int64_t>();
    options.withIsa = o["with_isa"].cast<bool>();
    options.codeObjectVersion = o["code_object_version"].cast<int64_t>();
    embedding::CompileSpecResult r;
    {
      py::gil_scoped_release release;
      r = embedding::compileSpec(options);
    }
    if (!r.ok)
      throw py::value_error(toPythonMessage(r.error));
    py::list kernels;
    for (const embedding::CompiledKernel &k : r.kernels) {
      py::dict d;
      addDescription(d, r.kernel);
      d["symbol"] = k.symbol;
      d["min_rows"] = k.minRows;
      d["max_rows"] = k.maxRows;
      d["block_m"] = k.blockM;
      d["block_n"] = k.blockN;
      d["waves"] = k.waves;
      d["mfma"] = k.mfma;
      d["split_k"] = k.splitK;
      d["stages"] = k.stages;
      d["occupancy"] = k.occupancy;
      py::dict md;
      md["kernarg_size"] = k.kernargSize;
      md["lds_bytes"] = k.ldsBytes;
      md["scratch_bytes"] = k.scratchBytes;
      md["vgprs"] = k.vgprs;
      md["agprs"] = k.agprs;
      md["sgprs"] = k.sgprs;
      md["vgpr_spills"] = k.vgprSpills;
      md["sgpr_spills"] = k.sgprSpills;
      md["wavefront_size"] = k.wavefrontSize;
      md["max_workgroup_size"] = k.maxWorkgroupSize;
      d["metadata"] = md;
      kernels.append(d);
    }
    py::dict result;
    result["code_object"] = py::bytes(r.codeObject);
    result["isa"] = r.isa;
    result["target_id"] = r.targetId;
    result["code_object_version"] = r.codeObjectVersion;
    result["kernels"] = kernels;
    return result;
  });
}
