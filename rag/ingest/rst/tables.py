"""reST grid and simple tables as Markdown pipe tables, one row a line.

    grid(["+------+-----+", "| Name | Tel |", "+======+=====+", "| Meier| 4711|", "+------+-----+"])
    -> ["| Name | Tel |", "| --- | --- |", "| Meier | 4711 |"]
    simple(["====  ====", "RAM   4 GB", "CPU   2 GHz", "====  ===="])
    -> ["| RAM | 4 GB |", "| CPU | 2 GHz |"]

A cell's lines are joined with spaces; a cell spanning columns sits in its first column, the others
stay empty; rows spanned by a cell are read as one row. Header rows (above "=" in a grid table,
between the first two borders of a simple table with three) are joined into one header line with a
"---" line below; a table without a header is its rows alone. Pipes in cells are escaped (\\|).

Does not handle: nested tables in cells (their text is joined), lists or code in cells (one line).
"""
import re

GRID_BORDER = re.compile(r"^\+[-=+]+\+\s*$")
SIMPLE_BORDER = re.compile(r"^=+(?: +=+)+\s*$")
DASHES = re.compile(r"^-+(?: +-+)*\s*$")  # a simple table's underline of cells that span columns


def markdown(header, rows, cell):
    """Pipe table lines: the header (if any) with its "---" line, then every row with text."""
    def line(cells):
        texts = (cell(" ".join(text.split())).replace("|", "\\|") for text in cells)
        return "| " + " | ".join(texts) + " |"
    out = [line(row) for row in rows if any(row)]
    if header and any(header):
        return [line(header), "| " + " | ".join("---" for _ in header) + " |"] + out
    return out


def merged(rows):
    """Rows joined by column. Example: [["Firma", ""], ["User", "PC"]] -> ["Firma User", "PC"]"""
    return [" ".join(filter(None, column)) for column in zip(*rows)] if rows else []


def grid_cells(line, bounds):
    """(column, text) of each cell of a grid table line; border pieces of spanned rows are no text.

    Example: ("| a    | b |", [0, 7, 11]) -> [(0, "a"), (1, "b")]
    """
    starts = [k for k, at in enumerate(bounds[:-1]) if at < len(line) and line[at] in "|+"]
    cells = []
    for n, k in enumerate(starts):
        end = bounds[starts[n + 1]] if n + 1 < len(starts) else bounds[-1]
        text = line[bounds[k] + 1:end].strip()
        cells.append((k, "" if re.fullmatch(r"[-=+]*", text) else text))
    return cells


def grid(lines, cell=lambda text: text):
    """Markdown lines of a grid table (its lines from the first border to the last); `cell` converts
    a cell's text (inline markup)."""
    borders = [line.rstrip() for line in lines if line.startswith("+")]
    bounds = sorted({at for line in borders for at, c in enumerate(line) if c == "+"})
    if len(bounds) < 2:
        return [line.strip("+|-= ") for line in lines if line.strip("+|-= ")]
    rows, header, current = [], 0, None
    for line in lines:
        if line.startswith("+"):  # a border, also one that a cell spanning rows crosses
            if current and any(current):
                rows.append(current)
            current = [""] * (len(bounds) - 1)
            header = len(rows) if "=" in line and not header else header
            continue
        current = current or [""] * (len(bounds) - 1)
        for k, text in grid_cells(line.rstrip(), bounds):
            current[k] = f"{current[k]} {text}".strip()
    if current and any(current):
        rows.append(current)
    return markdown(merged(rows[:header]), rows[header:], cell)


def simple_end(lines, start):
    """Index after the simple table whose first border is lines[start]: after the border that a
    blank line or the end follows, else at the first blank line."""
    for i in range(start + 1, len(lines)):
        if SIMPLE_BORDER.match(lines[i]) and (i + 1 == len(lines) or not lines[i + 1].strip()):
            return i + 1
    return next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))


def simple_cells(line, columns, spans):
    """The cell texts of a simple table line, one per column; `spans`: where its cells begin, end.

    Example: ("RAM   4 GB", [(0, 4), (6, 10)], [(0, 4), (6, 10)]) -> ["RAM", "4 GB"]
    """
    cells = [""] * len(columns)
    for n, (start, _) in enumerate(spans):
        end = spans[n + 1][0] if n + 1 < len(spans) else len(line)
        column = max(k for k, (begin, _) in enumerate(columns) if begin <= start)
        cells[column] = line[start:end].strip()
    return ["" if text == "\\" else text for text in cells]


def simple(lines, cell=lambda text: text):
    """Markdown lines of a simple table (its lines from the first border to the last)."""
    columns = [m.span() for m in re.finditer(r"=+", lines[0])]
    borders = [i for i, line in enumerate(lines) if SIMPLE_BORDER.match(line)]
    header_end = borders[1] if len(borders) >= 3 else 0
    header, rows = [], []
    for i, line in enumerate(lines):
        if i in borders or not line.strip() or DASHES.match(line):
            continue
        below = lines[i + 1] if i + 1 < len(lines) else ""
        spans = [m.span() for m in re.finditer(r"-+", below)] if DASHES.match(below) else columns
        cells = simple_cells(line, columns, spans)
        target = header if i < header_end else rows
        if target and not line[:columns[0][1]].strip():  # first column blank: the row goes on
            target[-1] = [f"{a} {b}".strip() for a, b in zip(target[-1], cells)]
        else:
            target.append(cells)
    return markdown(merged(header), rows, cell)
