package io.strata.core.fault;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.Status;
import io.strata.core.StrataException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FaultInjectorTest {
    private static final FaultPoint P = FaultPoint.of("test.point");

    @Test
    void disabledInjectorNeverFires() {
        FaultInjector f = FaultInjector.disabled();
        assertThat(f.check(P, FaultScope.NONE)).isEmpty();
        f.fire(P); // no exception
    }

    @Test
    void ruleFiresOnlyWhereItMatchesAndOnlySoManyTimes() {
        FaultInjector f = new FaultInjector(1);
        FaultInjector.Rule r = f.arm(P, new Fault.Drop()).when(s -> s.message().equals("Write")).times(2);
        assertThat(f.check(P, FaultScope.of("Read", "a"))).isEmpty();
        assertThat(f.check(FaultPoint.of("other"), FaultScope.of("Write", "a"))).isEmpty();
        assertThat(f.check(P, FaultScope.of("Write", "a"))).containsInstanceOf(Fault.Drop.class);
        assertThat(f.check(P, FaultScope.of("Write", "a"))).isPresent();
        assertThat(f.check(P, FaultScope.of("Write", "a"))).isEmpty();
        assertThat(r.fired()).isEqualTo(2);
    }

    @Test
    void fireThrowsTheArmedError() {
        FaultInjector f = new FaultInjector(1);
        f.arm(P, new Fault.Fail(new StrataException(Status.IO_ERROR, "injected")));
        assertThatThrownBy(() -> f.fire(P)).isInstanceOf(StrataException.class).hasMessage("injected");
        f.disarmAll();
        f.fire(P);
    }

    @Test
    void sameSeedSameSchedule() {
        assertThat(schedule(7)).isEqualTo(schedule(7)).isNotEqualTo(schedule(8));
    }

    private static List<Boolean> schedule(long seed) {
        FaultInjector f = new FaultInjector(seed);
        f.arm(P, new Fault.Drop()).probability(0.5);
        List<Boolean> out = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            out.add(f.check(P, FaultScope.NONE).isPresent());
        }
        return out;
    }
}
