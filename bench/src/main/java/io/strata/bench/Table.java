package io.strata.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/** A plain-text table with aligned columns, printed by every benchmark suite. */
public final class Table {
    private final List<String[]> rows = new ArrayList<>();
    private final String[] header;

    public Table(String... header) {
        this.header = header;
    }

    public void row(Object... cells) {
        String[] r = new String[header.length];
        for (int i = 0; i < r.length; i++) {
            r[i] = i < cells.length ? String.valueOf(cells[i]) : "";
        }
        rows.add(r);
    }

    /** The table as text, as {@link #print} prints it (for commands that return what they print). */
    public String render() {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        print(new PrintStream(bytes, true, java.nio.charset.StandardCharsets.UTF_8));
        return bytes.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    public void print(PrintStream out) {
        int[] w = new int[header.length];
        for (int i = 0; i < w.length; i++) {
            w[i] = header[i].length();
            for (String[] r : rows) {
                w[i] = Math.max(w[i], r[i].length());
            }
        }
        line(out, header, w);
        StringBuilder sep = new StringBuilder();
        for (int i = 0; i < w.length; i++) {
            sep.append(i == 0 ? "" : "-+-").append("-".repeat(w[i]));
        }
        out.println(sep);
        for (String[] r : rows) {
            line(out, r, w);
        }
    }

    private static void line(PrintStream out, String[] cells, int[] w) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < cells.length; i++) {
            if (i > 0) {
                sb.append(" | ");
            }
            boolean numeric = cells[i].matches("[-0-9.,x%]+");
            String c = cells[i];
            String pad = " ".repeat(w[i] - c.length());
            sb.append(numeric ? pad + c : c + pad);
        }
        out.println(sb.toString().stripTrailing());
    }
}
