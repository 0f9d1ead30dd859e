//===- InstTable.cpp - The table of emulated instructions -----------------===//

#include "InstTable.h"

#include "llvm/Support/ErrorHandling.h"

using namespace llvm;

namespace mlir::mlafp8::emu {

void InstTable::add(const InstDef &row) {
  auto [it, inserted] = rows.try_emplace(row.mnemonic, row);
  if (!inserted)
    report_fatal_error(Twine("emulator instruction table: two rows for ") +
                       row.mnemonic);
  // Generated names (e.g. "global_load_" + width) do not outlive the caller:
  // the row refers to the table's own copy.
  it->second.mnemonic = it->getKey();
}

void InstTable::add(ArrayRef<InstDef> newRows) {
  for (const InstDef &row : newRows)
    add(row);
}

const InstTable &getInstTable() {
  static const InstTable table = [] {
    InstTable t;
    registerScalarAluOps(t);
    registerScalarControlOps(t);
    registerVectorIntOps(t);
    registerVectorFloatOps(t);
    registerVectorPackedOps(t);
    registerVectorCompareOps(t);
    registerMemoryOps(t);
    registerMfmaOps(t);
    registerConversionOps(t);
    return t;
  }();
  return table;
}

} // namespace mlir::mlafp8::emu
