"""Cells of tables in wiki text, by the title of their column: Markdown, "a | b", CSV and
tab-separated rows.

    column_cells("| Name | Ort |\n|---|---|\n| Jana Kruse | Kiel |", lambda title: title == "Name")
    -> [("Name", (26, 38, " Jana Kruse "))]
    table_cells("a;b", 10) -> [(10, 11, "a"), (12, 13, "b")]

rag/privacy/names.py reads name columns with it, rag/privacy/addresses.py the Steuernummer and BIC
columns.

Does not handle: HTML tables, cells spanning several lines or columns, a header row that is not the
table's first line, quoted CSV fields with the separator inside them.
"""
import re


def column_cells(text, is_title):
    """(title, (start, end, cell)) for every cell below a header cell that is_title accepts, in
    Markdown, "a | b" and CSV tables (the |---| line skipped); see the module docstring for an
    example."""
    titles, offset = None, 0
    for line in text.split("\n"):
        cells = table_cells(line, offset)
        offset += len(line) + 1
        if len(cells) < 2:
            titles = None
            continue
        texts = [cell.strip() for _, _, cell in cells]
        if all(re.fullmatch(r":?-{2,}:?", t) for t in texts if t):
            continue  # the |---|---| line
        if titles is None:
            titles = {n: t.rstrip(":").strip() for n, t in enumerate(texts)
                      if is_title(t.rstrip(":").strip())}
            continue
        for n in sorted(titles):
            if n < len(cells):
                yield titles[n], cells[n]


def table_cells(line, offset):
    """[(start, end, text)] of the cells of a table line ("| a | b |", "a | b", CSV "a;b", "a,b,c"
    or "a<TAB>b"), offsets in the whole text."""
    sep = next((c for c in "|;\t" if c in line), None)
    if sep is None and line.count(",") >= 2 and ", " not in line:
        # a CSV export: "Ahmadzai,Farid,21073 Hamburg" (prose puts a space after its commas)
        sep = ","
    if sep is None:
        return []
    cells, pos = [], 0
    parts = line.split(sep)
    for n, part in enumerate(parts):
        if not ((n == 0 or n == len(parts) - 1) and not part.strip()):
            cells.append((offset + pos, offset + pos + len(part), part))
        pos += len(part) + 1
    return cells

