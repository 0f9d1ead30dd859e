//===- InstTable.h - One row per emulated instruction -----------*- C++ -*-===//
//
// Every mnemonic the emulator executes is one row: what the text parser must
// know about its operands, its class for the dynamic counts, its handler and,
// for a memory instruction, what it moves.
// Rows sit beside their handlers, one array per instruction family; the
// parser and the decoder consult only this table, so adding an instruction is
// adding its row.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_LIB_EMULATOR_INSTTABLE_H
#define MLA_FP8_LIB_EMULATOR_INSTTABLE_H

#include "Internal.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::mlafp8::emu {

/// How the printed operands of a mnemonic split into results and sources, and
/// what its absent VOP3P modifiers mean.
enum class Operands : uint8_t {
  /// One result, then the sources (most instructions).
  Def,
  /// Sources only: stores, SCC compares, branches, waits, barriers.
  NoDef,
  /// A result and a second result (a carry-out or VCC mask), then sources.
  TwoDefs,
  /// VOP3P packed math: one result; an absent op_sel_hi selects every
  /// source's high half for the high result.
  Packed,
  /// VOP3P mixed-precision FMA: one result; an absent op_sel_hi means f32
  /// sources.
  Mix,
};

/// The leading operands of `operands` that are results.
inline unsigned getNumDefs(Operands operands) {
  return operands == Operands::NoDef     ? 0
         : operands == Operands::TwoDefs ? 2
                                         : 1;
}

/// What a memory instruction moves, decoded from its mnemonic once, when the
/// table is built (all zero for other instructions).
struct MemAccess {
  /// Bytes per lane (per address for ds_read2/ds_write2; per wave for SMEM).
  uint8_t bytes = 0;
  bool store = false;
  /// Sub-dword loads that sign-extend (sbyte, sshort, i8, i16).
  bool signExtend = false;
  /// 16-bit "d16" forms: one half of the VGPR, the upper one if d16Hi.
  bool d16 = false, d16Hi = false;
  /// ds_read2st64/ds_write2st64: offsets count 64 elements.
  bool stride64 = false;
  /// The atomic writes the prior memory value to its first operand.
  bool returnsPrior = false;
  /// s_buffer_load: the address is a buffer resource, range-checked.
  bool bufferResource = false;
};

/// One instruction: the mnemonic without its encoding suffix (_e32, _e64,
/// _dpp, _sdwa), its operand signature, its class, its semantics and, for
/// memory instructions, what it moves.
struct InstDef {
  llvm::StringRef mnemonic;
  Operands operands;
  InstClass cls;
  Handler handler;
  MemAccess access = {};
};

/// The rows of every family, by mnemonic.
class InstTable {
public:
  /// Adds rows; a mnemonic added twice is a programming error (fatal).
  void add(llvm::ArrayRef<InstDef> rows);
  void add(const InstDef &row);

  /// The row of `mnemonic`, or null if the emulator lacks it.
  const InstDef *lookup(llvm::StringRef mnemonic) const {
    auto it = rows.find(mnemonic);
    return it == rows.end() ? nullptr : &it->second;
  }

  auto begin() const { return rows.begin(); }
  auto end() const { return rows.end(); }

private:
  llvm::StringMap<InstDef> rows;
};

/// The families, each adding its rows (ScalarAluOps.cpp, ScalarControlOps.cpp,
/// Vector*Ops.cpp, MemoryOps.cpp, MFMA.cpp, Conversions.cpp).
void registerScalarAluOps(InstTable &table);
void registerScalarControlOps(InstTable &table);
void registerVectorIntOps(InstTable &table);
void registerVectorFloatOps(InstTable &table);
void registerVectorPackedOps(InstTable &table);
void registerVectorCompareOps(InstTable &table);
void registerMemoryOps(InstTable &table);
void registerMfmaOps(InstTable &table);
void registerConversionOps(InstTable &table);

/// The full table (built once, then read-only).
const InstTable &getInstTable();

/// A VALU row of signature `OPERANDS` whose handler runs the statement(s)
/// after it for every executing lane `L` (see forEachLane).
#define MLAFP8_LANEWISE(NAME, OPERANDS, ...)                                   \
  ::mlir::mlafp8::emu::InstDef {                                               \
    NAME, ::mlir::mlafp8::emu::Operands::OPERANDS,                             \
        ::mlir::mlafp8::emu::InstClass::VALU,                                  \
        [](::mlir::mlafp8::emu::ExecContext &c,                                \
           const ::mlir::mlafp8::emu::Inst &I) -> ::llvm::Error {              \
          ::mlir::mlafp8::emu::forEachLane(                                    \
              c, I, [&](const ::mlir::mlafp8::emu::Lane &L) { __VA_ARGS__; }); \
          return ::llvm::Error::success();                                     \
        }                                                                      \
  }

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_LIB_EMULATOR_INSTTABLE_H
