#!/bin/bash
# check-bundle.sh DIR: succeeds when DIR holds one complete bundle of one
# chip (gfx942): exactly its four files, the manifest matching its digest and
# the code object matching the manifest's sha256.
set -e
cd "$1"
[ "$(ls -A | tr '\n' ' ')" = "gfx942.hsaco manifest.json manifest.sha256 mla_fp8_kernels.h " ]
sha256sum --check --strict --quiet manifest.sha256
grep -q "\"sha256\": \"$(sha256sum gfx942.hsaco | cut -d' ' -f1)\"" manifest.json
