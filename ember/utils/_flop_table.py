"""The FlopCounterMode table: torch's layout (module, FLOP, % total), plus the ops without a formula."""
from __future__ import annotations

_SUFFIXES = ["", "K", "M", "B", "T"]


def _suffix(number: int) -> str:
    """torch's get_suffix_str: 1.01B prints as 1001M."""
    return _SUFFIXES[max(0, min(len(_SUFFIXES) - 1, (len(str(number)) - 2) // 3))]


def _with_suffix(number: int, suffix: str) -> str:
    return f"{number / 1000 ** _SUFFIXES.index(suffix):.3f}" + suffix


def _percent(num: int, denom: int) -> str:
    return "0%" if denom == 0 else f"{num / denom:.2%}"


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _tabulate(rows: list[list[str]], header: list[str], align: tuple[str, ...]) -> str:
    """tabulate's "simple" format as torch calls it: columns two spaces apart and at least as wide as
    their header plus 2, a dashed rule under the header, an all-numeric column printed with "g"
    (torch asks tabulate to keep leading whitespace, which indents the module tree here)."""
    rows = [list(r) for r in rows]
    for i in range(len(header)):
        if all(_is_number(r[i]) for r in rows):
            for r in rows:
                r[i] = format(float(r[i]), "g")
    widths = [max([len(header[i]) + 2] + [len(r[i]) for r in rows]) for i in range(len(header))]

    def line(cells):
        return "  ".join(c.ljust(w) if a == "left" else c.rjust(w) for c, w, a in zip(cells, widths, align)).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def flop_table(flop_counts, unknown_counts, depth: int) -> str:
    """Rows as torch.utils.flop_counter.FlopCounterMode.get_table builds them; unknown ops listed after."""
    global_flops = sum(flop_counts["Global"].values()) if "Global" in flop_counts else 0
    global_suffix = _suffix(global_flops)
    subsumed = False

    def process_mod(mod_name: str, mod_depth: int) -> list[list[str]]:
        nonlocal subsumed
        counts = flop_counts[mod_name]
        total = sum(counts.values())
        subsumed |= total >= global_flops
        pad = " " * mod_depth
        rows = [[pad + mod_name, _with_suffix(total, global_suffix), _percent(total, global_flops)]]
        for k, v in counts.items():
            rows.append([pad + " - " + str(k), _with_suffix(v, global_suffix), _percent(v, global_flops)])
        return rows

    values: list[list[str]] = []
    for mod in sorted(flop_counts.keys()):
        if mod == "Global":
            continue
        mod_depth = mod.count(".") + 1
        if mod_depth > depth:
            continue
        values.extend(process_mod(mod, mod_depth - 1))
    if "Global" in flop_counts and not subsumed:
        for v in values:
            v[0] = " " + v[0]
        values = process_mod("Global", 0) + values
    if not values:
        values = [["Global", "0", "0%"]]
    table = _tabulate(values, ["Module", "FLOP", "% Total"], ("left", "right", "right"))
    unknown = unknown_counts.get("Global") if unknown_counts else None
    if unknown:
        calls = ", ".join(f"{name} x{n}" for name, n in sorted(unknown.items()))
        table += f"\nOps without a FLOP formula (not counted): {calls}"
    return table
