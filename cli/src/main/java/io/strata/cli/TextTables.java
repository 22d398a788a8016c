package io.strata.cli;

import io.strata.bench.Table;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** A {@link Table} as text, for commands that return what they print. */
final class TextTables {
    private TextTables() {
    }

    static String print(Table t) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        t.print(ps);
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
