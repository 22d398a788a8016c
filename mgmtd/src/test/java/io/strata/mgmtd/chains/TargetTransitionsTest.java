package io.strata.mgmtd.chains;

import io.strata.protocol.routing.LocalState;
import static org.assertj.core.api.Assertions.assertThat;

import io.strata.protocol.routing.TargetState;
import io.strata.mgmtd.chains.TargetTransitions.Pred;
import io.strata.mgmtd.chains.TargetTransitions.Row;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class TargetTransitionsTest {
    static final Path DOC = Path.of("..", "docs", "internals", "target-states.md");

    @Test
    void everyCombinationHasExactlyOneRow() {
        int combos = 0;
        for (LocalState l : LocalState.values()) {
            for (TargetState c : TargetState.values()) {
                for (Pred p : Pred.values()) {
                    long hits = TargetTransitions.rows().stream()
                            .filter(r -> r.local().contains(l) && r.current().contains(c) && r.pred().contains(p)).count();
                    assertThat(hits).as("(%s, %s, %s)", l, c, p).isEqualTo(1);
                    combos++;
                }
            }
        }
        assertThat(combos).isEqualTo(90);
    }

    @Test
    void theDocumentedTableIsTheCodeTable() throws Exception {
        String doc = Files.readString(DOC);
        String table = doc.substring(doc.indexOf("<!-- transition-table:start -->"), doc.indexOf("<!-- transition-table:end -->"));
        List<Row> parsed = new ArrayList<>();
        for (String line : table.lines().toList()) {
            if (!line.startsWith("|") || line.startsWith("| local") || line.startsWith("|---")) {
                continue;
            }
            String[] cells = line.substring(1, line.length() - 1).split("\\|");
            parsed.add(new Row(locals(cells[0]), states(cells[1]), preds(cells[2]),
                    TargetState.valueOf(cells[3].trim().toUpperCase(Locale.ROOT))));
        }
        assertThat(parsed).containsExactlyElementsOf(TargetTransitions.rows());
    }

    @Test
    void downTargetsNeverServeAndAliveOnesNeverStayDown() {
        for (TargetState c : TargetState.values()) {
            for (Pred p : Pred.values()) {
                assertThat(TargetTransitions.next(LocalState.OFFLINE, c, p)).isIn(TargetState.OFFLINE, TargetState.LASTSRV);
                assertThat(TargetTransitions.next(LocalState.ONLINE, c, p)).isNotIn(TargetState.OFFLINE, TargetState.LASTSRV);
                assertThat(TargetTransitions.next(LocalState.UP_TO_DATE, c, p)).isNotIn(TargetState.OFFLINE, TargetState.LASTSRV);
                // only serving, lastsrv or an up-to-date syncing target may (keep) serve
                for (LocalState l : LocalState.values()) {
                    if (TargetTransitions.next(l, c, p) == TargetState.SERVING) {
                        assertThat(c == TargetState.SERVING || c == TargetState.LASTSRV
                                || c == TargetState.SYNCING && l == LocalState.UP_TO_DATE).as("(%s, %s, %s)", l, c, p).isTrue();
                    }
                    if (TargetTransitions.next(l, c, p) == TargetState.SYNCING) {
                        assertThat(p).isEqualTo(Pred.SERVING);
                    }
                }
            }
        }
        // the returning target: offline -> waiting -> syncing -> serving only after up-to-date
        assertThat(TargetTransitions.next(LocalState.ONLINE, TargetState.OFFLINE, Pred.SERVING)).isEqualTo(TargetState.WAITING);
        assertThat(TargetTransitions.next(LocalState.UP_TO_DATE, TargetState.WAITING, Pred.SERVING)).isEqualTo(TargetState.SYNCING);
        assertThat(TargetTransitions.next(LocalState.ONLINE, TargetState.SYNCING, Pred.SERVING)).isEqualTo(TargetState.SYNCING);
        assertThat(TargetTransitions.next(LocalState.UP_TO_DATE, TargetState.SYNCING, Pred.SERVING)).isEqualTo(TargetState.SERVING);
        assertThat(TargetTransitions.next(LocalState.OFFLINE, TargetState.SERVING, Pred.NONE)).isEqualTo(TargetState.LASTSRV);
    }

    /** A cell of the table: {@code any}, or values separated by commas, each read by {@code parse}. */
    private static <E extends Enum<E>> Set<E> cell(String cell, Class<E> type, Function<String, E> parse) {
        Set<E> s = EnumSet.noneOf(type);
        for (String p : cell.split(",")) {
            if (p.trim().equals("any")) {
                return EnumSet.allOf(type);
            }
            s.add(parse.apply(p.trim()));
        }
        return s;
    }

    private static Set<LocalState> locals(String cell) {
        return cell(cell, LocalState.class, LocalState::ofPublicName);
    }

    private static Set<TargetState> states(String cell) {
        return cell(cell, TargetState.class, p -> TargetState.valueOf(p.toUpperCase(Locale.ROOT)));
    }

    private static Set<Pred> preds(String cell) {
        return cell(cell, Pred.class, p -> Pred.valueOf(p.toUpperCase(Locale.ROOT)));
    }
}
