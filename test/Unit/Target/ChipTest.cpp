//===- ChipTest.cpp - Tests of the chip table -----------------------------===//

#include "mla-fp8/Target/Chip.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::mlafp8;

TEST(ChipTest, LookupKnownChips) {
  const ChipInfo *gfx942 = lookupChip("gfx942");
  ASSERT_NE(gfx942, nullptr);
  EXPECT_EQ(gfx942->name, "gfx942");
  EXPECT_EQ(gfx942->waveSize, 64u);
  EXPECT_EQ(gfx942->ldsBytesPerWorkgroup, 65536u);
  EXPECT_EQ(gfx942->maxVgprsPerLane, 512u);
  EXPECT_EQ(gfx942->maxArchVgprsPerLane, 256u);
  EXPECT_EQ(gfx942->numCUs, 304u);
  EXPECT_EQ(gfx942->fp8Format, FP8Family::FNUZ);
  EXPECT_EQ(gfx942->fp8E4M3TypeName, "f8E4M3FNUZ");
  EXPECT_EQ(gfx942->elfMach, 0x4cu);
  EXPECT_EQ(gfx942->getTargetID(), "amdgcn-amd-amdhsa--gfx942");

  const ChipInfo *gfx950 = lookupChip("gfx950");
  ASSERT_NE(gfx950, nullptr);
  EXPECT_EQ(gfx950->ldsBytesPerWorkgroup, 163840u);
  EXPECT_EQ(gfx950->numCUs, 256u);
  EXPECT_EQ(gfx950->fp8Format, FP8Family::OCP);
  EXPECT_EQ(gfx950->fp8E4M3TypeName, "f8E4M3FN");
  EXPECT_EQ(gfx950->fp8E5M2TypeName, "f8E5M2");
  EXPECT_EQ(gfx950->elfMach, 0x4fu);

  EXPECT_EQ(getSupportedChips().size(), 2u);
  EXPECT_EQ(lookupChipByElfMach(0x4f), gfx950);
  EXPECT_EQ(lookupChipByElfMach(0x40), nullptr);
}

TEST(ChipTest, UnknownChip) {
  EXPECT_EQ(lookupChip("gfx90a"), nullptr);
  EXPECT_EQ(lookupChip(""), nullptr);
  EXPECT_EQ(describeUnsupportedChip("gfx90a"),
            "unknown chip 'gfx90a'; supported chips: gfx942, gfx950");
}

TEST(ChipTest, MfmaShapes) {
  const ChipInfo &gfx942 = *lookupChip("gfx942");
  const ChipInfo &gfx950 = *lookupChip("gfx950");
  EXPECT_EQ(gfx942.getArchitectureName(), "CDNA3");
  EXPECT_EQ(gfx950.getArchitectureName(), "CDNA4");
  for (const ChipInfo *chip : {&gfx942, &gfx950}) {
    const MfmaLayout *small = chip->findFP8Mfma(16, 16, 32);
    ASSERT_NE(small, nullptr);
    EXPECT_EQ(small->mnemonic, "v_mfma_f32_16x16x32_fp8_fp8");
    ASSERT_NE(chip->findFP8Mfma(32, 32, 16), nullptr);
    EXPECT_EQ(chip->findFP8Mfma(32, 32, 16, /*blockScaled=*/true), nullptr);
  }
  EXPECT_EQ(gfx942.findFP8Mfma(16, 16, 128), nullptr);
  EXPECT_EQ(gfx942.findFP8Mfma(32, 32, 64, /*blockScaled=*/true), nullptr);
  // A chip has exactly the records its architecture names.
  for (const ChipInfo &chip : getSupportedChips())
    for (const MfmaLayout &mfma : getMfmaLayouts())
      EXPECT_EQ(llvm::is_contained(chip.getMfmas(), &mfma),
                mfma.isOn(chip.arch))
          << chip.name.str() << " " << mfma.mnemonic.str();
}

TEST(ChipTest, FP8FormatDiagnostics) {
  const ChipInfo &gfx942 = *lookupChip("gfx942");
  const ChipInfo &gfx950 = *lookupChip("gfx950");
  EXPECT_FALSE(checkFP8FormatForChip(gfx942, "f8E4M3FNUZ"));
  EXPECT_FALSE(checkFP8FormatForChip(gfx942, "f8E5M2FNUZ"));
  EXPECT_FALSE(checkFP8FormatForChip(gfx950, "f8E4M3FN"));
  EXPECT_FALSE(checkFP8FormatForChip(gfx950, "f8E5M2"));

  EXPECT_EQ(checkFP8FormatForChip(gfx950, "f8E4M3FNUZ"),
            "gfx950 uses OCP fp8 (f8E4M3FN), not f8E4M3FNUZ");
  EXPECT_EQ(checkFP8FormatForChip(gfx942, "f8E4M3FN"),
            "gfx942 uses FNUZ fp8 (f8E4M3FNUZ), not f8E4M3FN");
  EXPECT_EQ(checkFP8FormatForChip(gfx942, "f8E5M2"),
            "gfx942 uses FNUZ fp8 (f8E5M2FNUZ), not f8E5M2");
  EXPECT_EQ(checkFP8FormatForChip(gfx950, "f8E4M3"),
            "gfx950 has no fp8 MFMA for 'f8E4M3'; it uses OCP fp8 (f8E4M3FN "
            "or f8E5M2)");

  MLIRContext context;
  Builder b(&context);
  EXPECT_FALSE(checkFP8FormatForChip(gfx942, b.getType<Float8E4M3FNUZType>()));
  EXPECT_EQ(checkFP8FormatForChip(gfx950, b.getType<Float8E4M3FNUZType>()),
            "gfx950 uses OCP fp8 (f8E4M3FN), not f8E4M3FNUZ");
  EXPECT_FALSE(checkFP8FormatForChip(gfx950, b.getType<Float8E4M3FNType>()));
  EXPECT_TRUE(checkFP8FormatForChip(gfx950, b.getF32Type()).has_value());
}
