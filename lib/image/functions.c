/* functions.c: where the functions of an image begin, symbols or not.
 *
 * A stripped library (Debian's libruby) names only its exported functions,
 * but every function it has, static ones included, has call frame
 * information for unwinding, and the linker indexes it: .eh_frame_hdr
 * (PT_GNU_EH_FRAME) holds a table of each FDE's initial location, sorted.
 * Two addresses lie in the same function exactly when they fall under the
 * same entry.  libdw reads that table for unwinding but does not hand it
 * out, so this file reads it: the one encoding every linker writes for it
 * (DW_EH_PE_datarel | DW_EH_PE_sdata4); others are "unknown". */
#include <gelf.h>

#include "internal.h"

#define EH_PE_OMIT    0xff
#define EH_PE_FORMAT  0x0f
#define EH_PE_UDATA4  0x03
#define EH_PE_SDATA4  0x0b
#define EH_PE_UDATA8  0x04
#define EH_PE_SDATA8  0x0c
#define EH_PE_ABSPTR  0x00
#define EH_PE_TABLE   0x3b      /* datarel | sdata4 */
#define EH_HDR_FIXED  4         /* version, eh_frame_ptr_enc, fde_count_enc, table_enc */
#define FDES_MAX      (1u << 24)

struct rbi_fde_table {
	const uint8_t *entries; /* FDE_COUNT pairs of int32 (initial location, FDE) */
	size_t count;
	uint64_t base;          /* runtime address they are relative to */
};

/* Bytes of a pointer in encoding ENC (.eh_frame_hdr's fixed-size ones). */
static size_t enc_size(uint8_t enc)
{
	switch (enc & EH_PE_FORMAT) {
	case EH_PE_UDATA4: case EH_PE_SDATA4:
		return 4;
	case EH_PE_UDATA8: case EH_PE_SDATA8: case EH_PE_ABSPTR:
		return 8;
	default:
		return 0;
	}
}

/* IMG's .eh_frame_hdr search table, or NULL when it has none we read. */
static struct rbi_fde_table *fde_table_load(const struct rbi_image *img)
{
	GElf_Addr bias;
	Elf *elf = img->mod ? dwfl_module_getelf(img->mod, &bias) : NULL;
	size_t nph, pos;
	GElf_Phdr ph;
	Elf_Data *d = NULL;
	const uint8_t *b;
	uint32_t count;
	struct rbi_fde_table *tab;

	if (!elf || elf_getphdrnum(elf, &nph) != 0)
		return NULL;
	for (size_t i = 0; i < nph && !d; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						 ELF_T_BYTE);
	if (!d || d->d_size < EH_HDR_FIXED || !(b = d->d_buf) || b[0] != 1)
		return NULL;
	/* eh_frame_ptr (skipped), then the count, then the table. */
	pos = EH_HDR_FIXED + enc_size(b[1]);
	if (b[1] == EH_PE_OMIT || pos == EH_HDR_FIXED ||
	    (b[2] & EH_PE_FORMAT) != EH_PE_UDATA4 || b[3] != EH_PE_TABLE ||
	    d->d_size < pos + 4)
		return NULL;
	count = rbi_get_u32(b, (uint32_t)pos);
	pos += 4;
	if (count == 0 || count > FDES_MAX || (d->d_size - pos) / 8 < count ||
	    !(tab = calloc(1, sizeof(*tab))))
		return NULL;
	tab->entries = b + pos;
	tab->count = count;
	tab->base = bias + ph.p_vaddr;
	return tab;
}

static int64_t entry_start(const struct rbi_fde_table *tab, size_t i)
{
	return (int32_t)rbi_get_u32(tab->entries, (uint32_t)(i * 8));
}

int rbi_image_function_start(struct rbi_image *img, uint64_t addr, uint64_t *start)
{
	const struct rbi_fde_table *tab;
	int64_t rel;
	size_t lo = 0, hi;

	if (!img->fdes_tried) {
		img->fdes_tried = true;
		img->fdes = fde_table_load(img);
	}
	if (!(tab = img->fdes))
		return RBI_ITER_END;
	rel = (int64_t)(addr - tab->base);
	if (rel < entry_start(tab, 0))
		return RBI_ITER_END;
	/* The last entry starting at or before REL. */
	hi = tab->count;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (entry_start(tab, mid) <= rel)
			lo = mid;
		else
			hi = mid;
	}
	*start = tab->base + (uint64_t)entry_start(tab, lo);
	return RBI_OK;
}

void rbi_image_functions_free(struct rbi_image *img)
{
	free(img->fdes);
	img->fdes = NULL;
	img->fdes_tried = false;
}
