//===- KernelBuilder.cpp - One gpu.func per tile, and its K-group loop ----===//

#include "Epilogue.h"
#include "KernelEmitter.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::mlafp8;
using namespace mlir::mlafp8::kernel_abi;

/// Elements of the flat memrefs that stand for the kernels' bare pointers. The
/// bare-pointer calling convention needs a static shape; nothing is sized by
/// it (loads and stores are plain global accesses).
static constexpr int64_t kUnboundedElements = 2147483647;

/// The element type the kernel reads or writes through pointer argument
/// `index`.
static Type getPointeeType(ArgIndex index, const KernelPlan &plan,
                           MLIRContext *context) {
  switch (index) {
  case kArgX:
    return plan.xType;
  case kArgW:
    return IntegerType::get(context, 8);
  case kArgWScale:
  case kArgWorkspace:
    return Float32Type::get(context);
  case kArgBias:
  case kArgY:
    return plan.yType;
  default:
    llvm_unreachable("not a pointer argument");
  }
}

gpu::GPUFuncOp mlir::mlafp8::buildKernel(gpu::GPUModuleOp module, Location loc,
                                         StringRef name,
                                         const KernelPlan &plan) {
  MLIRContext *context = module.getContext();
  auto global = gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Global);
  auto workgroup =
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  SmallVector<Type> inputs;
  for (const KernelArg &arg : getKernelArgs()) {
    if (arg.kind == ArgKind::I64) {
      inputs.push_back(IntegerType::get(context, 64));
      continue;
    }
    Type element =
        getPointeeType(static_cast<ArgIndex>(arg.index), plan, context);
    inputs.push_back(MemRefType::get({kUnboundedElements}, element,
                                     MemRefLayoutAttrInterface(), global));
  }
  auto type = FunctionType::get(context, inputs, {});
  Type i8Type = IntegerType::get(context, 8);
  Type f32Type = Float32Type::get(context);
  SmallVector<Type> lds = {
      MemRefType::get({plan.ldsBuffers * plan.ldsABytes}, i8Type,
                      MemRefLayoutAttrInterface(), workgroup),
      MemRefType::get({plan.ldsBuffers * plan.tile.getBlockM()}, f32Type,
                      MemRefLayoutAttrInterface(), workgroup)};

  ImplicitLocOpBuilder b(loc, context);
  b.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(b, name, type, lds, TypeRange());
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  // `inreg` kernel arguments are preloaded (in order from the first).
  for (unsigned i = 0; i < kPreloadedArgs; ++i)
    func.setArgAttr(i, LLVM::LLVMDialect::getInRegAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(plan.threads), 1, 1}));
  KernelEmitter(b, plan).emit(func);
  return func;
}

void KernelEmitter::bindArguments(gpu::GPUFuncOp func) {
  Block &entry = func.getBody().front();
  auto toIndex = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  };
  x = entry.getArgument(kArgX);
  w = entry.getArgument(kArgW);
  ws = entry.getArgument(kArgWScale);
  bias = entry.getArgument(kArgBias);
  y = entry.getArgument(kArgY);
  m = toIndex(entry.getArgument(kArgM));
  xStrideB = toIndex(entry.getArgument(kArgXStrideB));
  xStrideM = toIndex(entry.getArgument(kArgXStrideM));
  yStrideB = toIndex(entry.getArgument(kArgYStrideB));
  yStrideM = toIndex(entry.getArgument(kArgYStrideM));
  workspace = entry.getArgument(kArgWorkspace);
  ldsA = func.getWorkgroupAttributions()[0];
  ldsScales = func.getWorkgroupAttributions()[1];

  int64_t splitK = p.tile.getSplitK();
  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  lane = rem(tid, p.waveSize);
  wave = div(tid, p.waveSize);
  waveN = rem(wave, p.wavesN);
  waveM = div(wave, p.wavesN);
  // The splits of one output tile are adjacent along x (x = tile * split_k +
  // split), so they are dispatched close together.
  Value blockX = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  nTile = splitK == 1 ? blockX : div(blockX, splitK);
  split = splitK == 1 ? Value() : rem(blockX, splitK);
  n0 = mul(nTile, p.tile.getBlockN());
  mTile = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  m0 = mul(mTile, p.tile.getBlockM());
  batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  accType = VectorType::get({p.accumulators}, b.getF32Type());
}

void KernelEmitter::emit(gpu::GPUFuncOp func) {
  b.setInsertionPointToStart(&func.getBody().front());
  bindArguments(func);
  // The weight descale is workgroup-uniform: loaded before any store, it is a
  // scalar load, resident long before the epilogue needs it.
  Value descale = memref::LoadOp::create(
      b, ws, ValueRange{p.perBatchScale ? batch : cst(0)});
  Value zero = arith::ConstantOp::create(
      b, accType, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));
  SmallVector<Value> accs =
      emitGroups(SmallVector<Value>(p.mtPerWave * p.ntPerWave, zero));
  std::unique_ptr<Epilogue> epilogue = createOutputEpilogue(*this, descale);
  if (p.tile.getSplitK() > 1)
    epilogue = createSplitKEpilogue(*this, std::move(epilogue));
  epilogue->emit(accs);
  gpu::ReturnOp::create(b);
}

SmallVector<Value> KernelEmitter::emitGroups(SmallVector<Value> accs) {
  // Split s runs groups [s * numGroups / split_k, (s + 1) * numGroups /
  // split_k): every split gets at least one group (split_k <= numGroups). A
  // partial last group belongs to the last split.
  int64_t splitK = p.tile.getSplitK();
  Value kBegin = cst(0), kEnd = cst(p.fullGroups * p.groupSize);
  if (split) {
    Value gBegin = div(mul(split, p.numGroups), splitK);
    Value gEnd = div(mul(add(split, 1), p.numGroups), splitK);
    if (p.tailColumns != 0)
      gEnd = minIdx(gEnd, cst(p.fullGroups));
    kBegin = mul(gBegin, p.groupSize);
    kEnd = mul(gEnd, p.groupSize);
  }

  if (p.unrolledGroups > 0)
    accs = emitUnrolledGroups(kBegin, p.unrolledGroups, accs);
  else if (p.fullGroups > 0)
    accs = emitGroupLoop(kBegin, kEnd, p.tile.getStages(), accs);
  if (p.tailColumns == 0)
    return accs;
  auto tailGroup = [&](ValueRange current) {
    return emitGroup(
        loadGroup(cst(p.fullGroups * p.groupSize), /*partial=*/true), current,
        /*more=*/false);
  };
  if (!split)
    return tailGroup(accs);
  // Only the last split runs the partial group (a workgroup-uniform branch).
  Value isLastSplit = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, split,
                                            cst(splitK - 1));
  SmallVector<Type> types(accs.size(), accType);
  auto ifOp = scf::IfOp::create(b, types, isLastSplit, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(ifOp.thenBlock());
    scf::YieldOp::create(b, tailGroup(accs));
    b.setInsertionPointToEnd(ifOp.elseBlock());
    scf::YieldOp::create(b, accs);
  }
  return SmallVector<Value>(ifOp.getResults());
}

SmallVector<Value> KernelEmitter::emitUnrolledGroups(Value kBegin,
                                                     int64_t count,
                                                     SmallVector<Value> accs) {
  // Straight-line code: group g's loads are issued `stages - 1` groups ahead
  // of its compute, each batch into registers of its own, so the only waits
  // are LLVM's exact vmcnt counts of the younger batches still in flight. (A
  // loop would pass prefetched values through its back edge as register
  // copies, each a wait for its load.)
  int64_t ahead = std::min(p.tile.getStages() - 1, count - 1);
  auto groupK0 = [&](int64_t g) { return add(kBegin, g * p.groupSize); };
  SmallVector<SmallVector<Value>> inFlight;
  for (int64_t g = 0; g < ahead; ++g)
    inFlight.push_back(loadGroup(groupK0(g), /*partial=*/false));
  auto issueAhead = [&](int64_t g) {
    if (g + ahead < count)
      inFlight.push_back(loadGroup(groupK0(g + ahead), /*partial=*/false));
  };
  if (p.ldsBuffers == 1) {
    for (int64_t g = 0; g < count; ++g) {
      issueAhead(g);
      accs = emitGroup(inFlight[g], accs,
                       /*more=*/g + 1 < count || p.tailColumns != 0);
      // Keeps the scheduler from pulling this group's waits into the
      // previous group's MFMAs, or its MFMAs below the next group's
      // quantization.
      if (g + 1 < count)
        emitScheduleFence();
    }
    return accs;
  }
  // Every group is quantized into its own LDS copy, then one barrier, then
  // the MFMAs of all groups, in group order (the accumulation order of the
  // reference): one barrier instead of two per group, and the LDS reads of
  // all groups in flight together.
  setSaturatingFp8(true);
  for (int64_t g = 0; g < count; ++g) {
    issueAhead(g);
    ldsBuffer = g;
    quantizeRows(getXLoads(inFlight[g]));
  }
  setSaturatingFp8(false);
  gpu::BarrierOp::create(b);
  for (int64_t g = 0; g < count; ++g) {
    ldsBuffer = g;
    accs = multiplyGroup(inFlight[g], accs);
  }
  ldsBuffer = 0;
  // A partial group follows, which rewrites copy 0.
  if (p.tailColumns != 0)
    gpu::BarrierOp::create(b);
  return accs;
}

SmallVector<Value> KernelEmitter::emitGroupLoop(Value kBegin, Value kEnd,
                                                int64_t stages,
                                                SmallVector<Value> accs) {
  // With stages > 1 the loads of group g + stages - 1 are issued before group
  // g is computed (clamped to the last full group, which the last iterations
  // load again: in bounds and unused; also when a split has no full group and
  // the loop runs zero times). The groups in flight are loop-carried values.
  int64_t lastK0 = (p.fullGroups - 1) * p.groupSize;
  auto clampedK0 = [&](Value k0) { return minIdx(k0, cst(lastK0)); };
  SmallVector<Value> init(accs);
  size_t numAccs = accs.size(), perGroup = 0;
  for (int64_t g = 0; g + 1 < stages; ++g) {
    SmallVector<Value> loads =
        loadGroup(clampedK0(add(kBegin, g * p.groupSize)), /*partial=*/false);
    perGroup = loads.size();
    init.append(loads);
  }
  auto loop = scf::ForOp::create(b, kBegin, kEnd, cst(p.groupSize), init);
  OpBuilder::InsertionGuard guard(b);
  Block *body = loop.getBody();
  if (!body->empty() && body->mightHaveTerminator())
    body->getTerminator()->erase();
  b.setInsertionPointToEnd(body);
  ValueRange iterArgs = loop.getRegionIterArgs();
  ValueRange inFlight = iterArgs.drop_front(numAccs);
  SmallVector<Value> newest = loadGroup(
      stages > 1
          ? clampedK0(add(loop.getInductionVar(), (stages - 1) * p.groupSize))
          : loop.getInductionVar(),
      /*partial=*/false);
  SmallVector<Value> yielded;
  if (stages > 1) {
    yielded =
        emitGroup(inFlight.take_front(perGroup), iterArgs.take_front(numAccs));
    // The prefetched values reach the loop's block arguments through register
    // copies at the back edge, which wait for the loads. The fence keeps the
    // scheduler from hoisting those copies (and their waits) in between this
    // group's MFMAs.
    emitScheduleFence();
    yielded.append(inFlight.begin() + perGroup, inFlight.end());
    yielded.append(newest);
  } else {
    yielded = emitGroup(newest, iterArgs.take_front(numAccs));
  }
  scf::YieldOp::create(b, yielded);
  return SmallVector<Value>(loop.getResults().take_front(numAccs));
}
