"""The checked AMDGPU code-object reader, in Python (lib/CodeObject).

What the bundle loader needs of a code object: its processor, its
code-object version, the symbols it defines and the AMDGPU metadata note of
its kernels. Every offset and length read from the file is checked against
the file before it is used; the note decoder bounds its depth, the lengths a
header claims and the note's size (MAX_METADATA_NOTE_BYTES); a symbol name
is read no further than the longest kernel name. A damaged or forged file
thus gives a CodeObjectError, never a crash, and costs time and memory
within those bounds. The checks are those of the C++ reader (which uses
LLVM's ELF and MessagePack readers): tests/test_pure_loader.py runs both on
the same damaged files.
"""

import struct
from collections import namedtuple

from ._abi import MAX_METADATA_DEPTH, MAX_METADATA_NOTE_BYTES

__all__ = ["CodeObjectError", "printable", "read_code_object_metadata"]


class CodeObjectError(ValueError):
    """A code object that cannot be read; the message says why."""


# ELF constants (the System V ABI and its AMDGPU supplement).
_EI_CLASS, _EI_DATA, _EI_OSABI, _EI_ABIVERSION = 4, 5, 7, 8
_ELFCLASS32, _ELFCLASS64 = 1, 2
_ELFDATA2LSB, _ELFDATA2MSB = 1, 2
_EM_AMDGPU = 224
_ELFOSABI_AMDGPU_HSA = 64
_ELFABIVERSION_AMDGPU_HSA_V4 = 2
_SHT_SYMTAB, _SHT_STRTAB, _SHT_NOTE = 2, 3, 7
_SHT_DYNSYM = 11
_SHN_UNDEF = 0
_NT_AMDGPU_METADATA = 32

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_NHDR = struct.Struct("<III")
_U64 = (1 << 64) - 1

Section = namedtuple("Section", "index name type flags addr offset size link "
                     "info addralign entsize")

#: One kernel argument of the note: offset, size, value_kind.
ArgMetadata = namedtuple("ArgMetadata", "offset size value_kind")


class KernelMetadata:
    """One amdhsa.kernels entry (the fields the loader checks)."""

    def __init__(self):
        self.name = ""
        self.symbol = ""
        self.kernarg_segment_size = 0
        self.kernarg_segment_align = 0
        self.group_segment_fixed_size = 0
        self.private_segment_fixed_size = 0
        self.wavefront_size = 0
        self.max_flat_workgroup_size = 0
        self.reqd_workgroup_size = None
        self.args = []


class CodeObjectMetadata:
    """What a code object says about itself."""

    def __init__(self):
        self.target_id = ""
        self.processor = ""
        self.code_object_version = 0
        self.kernels = []
        self.defined_symbols = set()
        self._by_name = None
        self._indexed = 0

    def index_kernels(self):
        """Indexes the kernels by name (the first of equal names), so that
        each lookup is a dict lookup: a loader looks up every manifest
        entry, and a scan made a forged bundle's load quadratic. Call again
        after renaming kernels; a changed count re-indexes by itself."""
        self._by_name = {}
        for kernel in self.kernels:
            self._by_name.setdefault(kernel.name, kernel)
        self._indexed = len(self.kernels)

    def find_kernel(self, name):
        """The kernel named `name` (the first, should two share it), or
        None."""
        if self._by_name is None or self._indexed != len(self.kernels):
            self.index_kernels()
        return self._by_name.get(name)


def _fail(message):
    raise CodeObjectError(message)


def printable(text):
    """A string read from a code object (its bytes kept by
    surrogateescape, so that comparisons are of bytes) for a message: bytes
    that are not UTF-8 as \\xNN."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8",
                                                          "backslashreplace")


# --- ELF ---------------------------------------------------------------------


class _Elf:
    """A 64-bit little-endian ELF file whose tables were checked against
    its size as they are read."""

    def __init__(self, data):
        self.data = data
        if len(data) < 18 or data[:4] != b"\x7fELF":
            _fail("not an ELF object: The file was not recognized as a "
                  "valid object file")
        elf_class, elf_data = data[_EI_CLASS], data[_EI_DATA]
        if elf_class not in (_ELFCLASS32, _ELFCLASS64):
            _fail("not an ELF object: Invalid ELF class")
        if elf_data not in (_ELFDATA2LSB, _ELFDATA2MSB):
            _fail("not an ELF object: Invalid ELF data")
        header_size = 64 if elf_class == _ELFCLASS64 else 52
        if len(data) < header_size:
            _fail(f"not an ELF object: invalid buffer: the size "
                  f"({len(data)}) is smaller than an ELF header "
                  f"({header_size})")
        if elf_class != _ELFCLASS64 or elf_data != _ELFDATA2LSB:
            # The other layouts' tables are never read: refused for what
            # they are, as soon as the header is whole.
            _fail("not a 64-bit little-endian ELF object")
        (self.ident, _, self.machine, _, _, _, self.shoff, self.flags, _, _,
         _, self.shentsize, self.shnum, _) = _EHDR.unpack_from(data)
        self.sections = self._read_sections()

    def _read_sections(self):
        data, offset = self.data, self.shoff
        if offset == 0:
            return []
        if self.shentsize != _SHDR.size:
            _fail(f"not an ELF object: invalid e_shentsize in ELF header: "
                  f"{self.shentsize}")
        if offset + _SHDR.size > len(data):
            _fail("not an ELF object: section header table goes past the "
                  "end of the file")
        count = self.shnum
        if count == 0:
            count = struct.unpack_from("<Q", data, offset + 32)[0]
        if offset + count * _SHDR.size > len(data):
            _fail("not an ELF object: section table goes past the end of "
                  "file")
        return [Section(i, *_SHDR.unpack_from(data, offset + i * _SHDR.size))
                for i in range(count)]

    def contents(self, section, entry_size=1):
        """The bytes of `section`, checked as an array of `entry_size`-byte
        entries within the file (at any alignment: LLVM's reader takes
        every offset too)."""
        if entry_size != 1 and section.entsize != entry_size:
            _fail(f"section [index {section.index}] has invalid sh_entsize: "
                  f"expected {entry_size}, but got {section.entsize}")
        if section.size % entry_size:
            _fail(f"section [index {section.index}] has an invalid sh_size "
                  f"({section.size}) which is not a multiple of its "
                  f"sh_entsize ({section.entsize})")
        if section.offset + section.size > _U64:
            _fail(f"section [index {section.index}] has a sh_offset and "
                  f"sh_size that cannot be represented")
        if section.offset + section.size > len(self.data):
            _fail(f"section [index {section.index}] has a sh_offset "
                  f"(0x{section.offset:x}) + sh_size (0x{section.size:x}) "
                  f"that is greater than the file size "
                  f"(0x{len(self.data):x})")
        return self.data[section.offset:section.offset + section.size]

    def section(self, index):
        if index >= len(self.sections):
            _fail(f"invalid section index: {index}")
        return self.sections[index]

    def string_table(self, section):
        if section.type != _SHT_STRTAB:
            _fail(f"invalid sh_type for string table section [index "
                  f"{section.index}]: expected SHT_STRTAB")
        data = self.contents(section)
        if not data:
            _fail(f"SHT_STRTAB string table section [index {section.index}] "
                  f"is empty")
        if data[-1] != 0:
            _fail(f"SHT_STRTAB string table section [index {section.index}] "
                  f"is non-null terminated")
        return data

    def defined_symbols(self, wanted):
        """Which of the names `wanted` (bytes) the symbol table (or else
        the dynamic one) defines. A name is read no further than the
        longest wanted one, so that a table of many long names costs no
        more than one of short names."""
        table = None
        for section in self.sections:
            if section.type == _SHT_SYMTAB:
                table = section
                break
            if section.type == _SHT_DYNSYM and table is None:
                table = section
        if table is None:
            return set()
        try:
            symbols = self.contents(table, _SYM.size)
        except CodeObjectError as error:
            _fail(f"malformed symbol table: {error}")
        try:
            names = self.string_table(self.section(table.link))
        except CodeObjectError as error:
            _fail(f"malformed symbol names: {error}")
        longest = max(map(len, wanted), default=0)
        defined = set()
        for offset in range(0, len(symbols), _SYM.size):
            name_offset, _, _, shndx, _, _ = _SYM.unpack_from(symbols, offset)
            if shndx == _SHN_UNDEF:
                continue
            if name_offset >= len(names):
                _fail(f"malformed symbol name: st_name (0x{name_offset:x}) "
                      f"is past the end of the string table of size "
                      f"0x{len(names):x}")
            end = names.find(b"\0", name_offset, name_offset + longest + 1)
            if end >= 0 and names[name_offset:end] in wanted:
                defined.add(names[name_offset:end].decode("utf-8",
                                                          "surrogateescape"))
        return defined

    def notes(self, section):
        """(name, type, desc) of each note of a SHT_NOTE section."""
        if section.offset + section.size > len(self.data):
            _fail(f"malformed note section: invalid offset "
                  f"(0x{section.offset:x}) or size (0x{section.size:x})")
        if section.addralign not in (0, 1, 4, 8):
            _fail(f"malformed note section: alignment "
                  f"({section.addralign}) is not 4 or 8")
        step = max(section.addralign, 4)
        position, remaining = section.offset, section.size
        while remaining:
            if remaining < _NHDR.size:
                _fail("malformed note section: ELF note overflows container")
            name_size, desc_size, note_type = _NHDR.unpack_from(self.data,
                                                                position)
            size = (_align(_NHDR.size + name_size, step) +
                    _align(desc_size, step))
            if size > remaining:
                _fail("malformed note section: ELF note overflows container")
            name = self.data[position + _NHDR.size:
                             position + _NHDR.size + max(name_size - 1, 0)]
            # The descriptor starts where the section's own alignment puts
            # it, as LLVM's reader computes it (0 and 1 included).
            desc_at = position + _align(_NHDR.size + name_size,
                                        section.addralign)
            yield name, note_type, self.data[desc_at:desc_at + desc_size]
            position += size
            remaining -= size


def _align(value, alignment):
    """value rounded up to a power-of-two alignment, in 64-bit arithmetic
    (alignment 0 gives 0, as the unchecked mask does)."""
    return (value + alignment - 1) & ~(alignment - 1) & _U64


# --- MessagePack -------------------------------------------------------------

_MAP, _ARRAY, _STRING, _BINARY, _UINT, _INT, _OTHER, _EXT = range(8)


class _Node:
    __slots__ = ("kind", "value", "items")

    def __init__(self, kind, value=None, items=None):
        self.kind, self.value, self.items = kind, value, items


class _MsgPack:
    """Decodes one MessagePack document into _Nodes, bounded: depth by
    MAX_METADATA_DEPTH, the node count by the blob's size (each node takes
    at least one byte)."""

    def __init__(self, blob):
        self.blob, self.pos, self.budget = blob, 0, len(blob)

    def _take(self, size, what):
        if size > len(self.blob) - self.pos:
            _fail(f"the AMDGPU metadata note is not valid MessagePack: "
                  f"invalid {what} with insufficient payload")
        start = self.pos
        self.pos += size
        return self.blob[start:self.pos]

    def _uint(self, size, what):
        return int.from_bytes(self._take(size, what), "big")

    def _read(self):
        """(kind, value or raw bytes, container length)."""
        if self.pos >= len(self.blob):
            _fail("the AMDGPU metadata note is truncated")
        byte = self.blob[self.pos]
        self.pos += 1
        if byte <= 0x7f:
            return _UINT, byte, 0
        if byte >= 0xe0:
            return _INT, byte - 0x100, 0
        if byte <= 0x8f:
            return _MAP, None, byte & 0xf
        if byte <= 0x9f:
            return _ARRAY, None, byte & 0xf
        if byte <= 0xbf:
            return _STRING, self._take(byte & 0x1f, "raw"), 0
        if byte in (0xc0, 0xc2, 0xc3):
            return _OTHER, {0xc0: None, 0xc2: False, 0xc3: True}[byte], 0
        if 0xc4 <= byte <= 0xc6:
            size = self._uint(1 << (byte - 0xc4), "raw")
            return _BINARY, self._take(size, "raw"), 0
        if 0xc7 <= byte <= 0xc9:
            size = self._uint(1 << (byte - 0xc7), "extension")
            self._take(1 + size, "extension")
            return _EXT, None, 0
        if byte in (0xca, 0xcb):
            self._take(4 if byte == 0xca else 8, "float")
            return _OTHER, None, 0
        if 0xcc <= byte <= 0xcf:
            return _UINT, self._uint(1 << (byte - 0xcc), "integer"), 0
        if 0xd0 <= byte <= 0xd3:
            size = 1 << (byte - 0xd0)
            return _INT, int.from_bytes(self._take(size, "integer"), "big",
                                        signed=True), 0
        if 0xd4 <= byte <= 0xd8:
            self._take(1 + (1 << (byte - 0xd4)), "extension")
            return _EXT, None, 0
        if 0xd9 <= byte <= 0xdb:
            size = self._uint(1 << (byte - 0xd9), "raw")
            return _STRING, self._take(size, "raw"), 0
        if byte in (0xdc, 0xdd):
            return _ARRAY, None, self._uint(2 if byte == 0xdc else 4,
                                            "array length")
        if byte in (0xde, 0xdf):
            return _MAP, None, self._uint(2 if byte == 0xde else 4,
                                          "map length")
        _fail("the AMDGPU metadata note is not valid MessagePack: invalid "
              "first byte")
        return None  # unreachable

    def decode(self, depth=0):
        kind, value, count = self._read()
        if self.budget == 0:
            _fail("the AMDGPU metadata note is truncated")
        self.budget -= 1
        if kind not in (_MAP, _ARRAY):
            return _Node(kind, value)
        if depth >= MAX_METADATA_DEPTH:
            _fail(f"the AMDGPU metadata note nests deeper than "
                  f"{MAX_METADATA_DEPTH} levels")
        is_map = kind == _MAP
        if count > self.budget or (is_map and 2 * count > self.budget):
            _fail("the AMDGPU metadata note is truncated")
        items = []
        for i in range(2 * count if is_map else count):
            item = self.decode(depth + 1)
            if is_map and i % 2 == 0 and item.kind in (_MAP, _ARRAY, _EXT):
                _fail("the AMDGPU metadata note has a map key that is not a "
                      "scalar")
            items.append(item)
        return _Node(kind, None, items)


def _entries(node, context):
    """(key, value) of a map's string keys, in order."""
    if node.kind != _MAP:
        _fail(f"{context} is not a map")
    for i in range(0, len(node.items) - 1, 2):
        key = node.items[i]
        if key.kind == _STRING:
            yield key.value.decode("utf-8", "surrogateescape"), \
                node.items[i + 1]


def _unsigned(context, key, node, bits=64):
    value = node.value if node.kind in (_UINT, _INT) else None
    if value is None or value < 0 or value >= 1 << bits:
        _fail(f"{context}: '{key}' is not an unsigned integer in range")
    return value


def _string(context, key, node):
    if node.kind != _STRING:
        _fail(f"{context}: '{key}' is not a string")
    return node.value.decode("utf-8", "surrogateescape")


def _parse_arg(node, context):
    offset = size = None
    kind = ""
    for key, value in _entries(node, context):
        if key == ".offset":
            offset = _unsigned(context, key, value)
        elif key == ".size":
            size = _unsigned(context, key, value)
        elif key == ".value_kind":
            kind = _string(context, key, value)
        elif key in (".name", ".address_space"):
            _string(context, key, value)
    if offset is None or size is None or not kind:
        _fail(f"{context} lacks .offset, .size or .value_kind")
    return ArgMetadata(offset, size, kind)


_KERNEL_UNSIGNED = {
    ".kernarg_segment_size": ("kernarg_segment_size", 64),
    ".kernarg_segment_align": ("kernarg_segment_align", 64),
    ".group_segment_fixed_size": ("group_segment_fixed_size", 64),
    ".private_segment_fixed_size": ("private_segment_fixed_size", 64),
    ".vgpr_count": (None, 32), ".agpr_count": (None, 32),
    ".sgpr_count": (None, 32), ".vgpr_spill_count": (None, 32),
    ".sgpr_spill_count": (None, 32),
    ".wavefront_size": ("wavefront_size", 32),
    ".max_flat_workgroup_size": ("max_flat_workgroup_size", 32),
}


def _parse_kernel(node, index):
    context = f"amdhsa.kernels[{index}]"
    kernel = KernelMetadata()
    for key, value in _entries(node, context):
        if key == ".name":
            kernel.name = _string(context, key, value)
        elif key == ".symbol":
            kernel.symbol = _string(context, key, value)
        elif key in _KERNEL_UNSIGNED:
            attribute, bits = _KERNEL_UNSIGNED[key]
            number = _unsigned(context, key, value, bits)
            if attribute:
                setattr(kernel, attribute, number)
        elif key == ".uses_dynamic_stack":
            if value.kind != _OTHER or not isinstance(value.value, bool):
                _fail(f"{context}: '{key}' is not a boolean")
        elif key == ".reqd_workgroup_size":
            if value.kind != _ARRAY or len(value.items) != 3:
                _fail(f"{context}: '.reqd_workgroup_size' is not three "
                      f"integers")
            kernel.reqd_workgroup_size = tuple(
                _unsigned(context, key, item, 32) for item in value.items)
        elif key == ".args":
            if value.kind != _ARRAY:
                _fail(f"{context}: '.args' is not an array")
            kernel.args.extend(
                _parse_arg(arg, f"{context}.args[{i}]")
                for i, arg in enumerate(value.items))
    if not kernel.name or not kernel.symbol:
        _fail(f"{context} lacks .name or .symbol")
    return kernel


def _parse_note(blob, result):
    document = _MsgPack(blob).decode()
    has_kernels = False
    context = "the AMDGPU metadata"
    for key, value in _entries(document, context):
        if key == "amdhsa.target":
            result.target_id = _string(context, key, value)
        elif key == "amdhsa.version":
            if value.kind != _ARRAY or len(value.items) != 2:
                _fail("'amdhsa.version' is not a pair")
            for item in value.items:
                _unsigned(context, key, item, 32)
        elif key == "amdhsa.kernels":
            if has_kernels:
                _fail("'amdhsa.kernels' appears twice")
            has_kernels = True
            if value.kind != _ARRAY:
                _fail("'amdhsa.kernels' is not an array")
            result.kernels.extend(_parse_kernel(item, i)
                                  for i, item in enumerate(value.items))
    if not has_kernels:
        _fail("the AMDGPU metadata has no 'amdhsa.kernels'")


def read_code_object_metadata(data):
    """The metadata of the code object `data` (bytes).

    Raises:
      CodeObjectError: naming what is wrong with it.
    """
    elf = _Elf(data)
    if elf.machine != _EM_AMDGPU:
        _fail(f"not an AMDGPU ELF object (e_machine {elf.machine})")
    if elf.ident[_EI_OSABI] != _ELFOSABI_AMDGPU_HSA:
        _fail(f"not an HSA code object (EI_OSABI {elf.ident[_EI_OSABI]})")
    abi_version = elf.ident[_EI_ABIVERSION]
    if abi_version < _ELFABIVERSION_AMDGPU_HSA_V4:
        _fail("code object versions before v4 are not supported")
    result = CodeObjectMetadata()
    result.code_object_version = abi_version + 2
    found = False
    for section in elf.sections:
        if section.type != _SHT_NOTE:
            continue
        for name, note_type, desc in elf.notes(section):
            if name != b"AMDGPU" or note_type != _NT_AMDGPU_METADATA:
                continue
            if found:
                _fail("more than one AMDGPU metadata note")
            found = True
            if len(desc) > MAX_METADATA_NOTE_BYTES:
                _fail(f"the AMDGPU metadata note is {len(desc)} bytes, more "
                      f"than the limit of {MAX_METADATA_NOTE_BYTES}")
            _parse_note(desc, result)
    if not found:
        _fail("no NT_AMDGPU_METADATA note")
    # Only the kernels' own names are ever looked up, so only they are kept.
    result.defined_symbols = elf.defined_symbols(
        {name.encode("utf-8", "surrogateescape")
         for kernel in result.kernels for name in (kernel.name,
                                                   kernel.symbol)})
    result.index_kernels()
    target = result.target_id
    processor = target.rsplit("--", 1)[1] if "--" in target else ""
    result.processor = processor.split(":", 1)[0]
    return result
