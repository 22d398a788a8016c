package io.strata.core.fault;

import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides, at named {@link FaultPoint}s, whether to inject a {@link Fault}. Production code asks
 * it at each point; it answers "nothing" (one volatile read) unless a test armed a rule. Rules
 * draw from one seeded {@link Random}, so a failing schedule replays with the same seed.
 *
 * <pre>{@code
 * faults.arm(FaultPoint.RPC_SEND, new Fault.Drop())
 *       .when(s -> s.message().equals("WriteChunk")).probability(0.1).times(5);
 * }</pre>
 */
public final class FaultInjector {
    private static final Logger LOG = LoggerFactory.getLogger(FaultInjector.class);

    private final long seed;
    private final Random random;
    private final List<Rule> rules = new CopyOnWriteArrayList<>();
    private volatile boolean armed;

    public FaultInjector(long seed) {
        this.seed = seed;
        this.random = new Random(seed);
    }

    /** An injector with no rules, for production. */
    public static FaultInjector disabled() {
        return new FaultInjector(0);
    }

    public long seed() {
        return seed;
    }

    /** Arms {@code point}; the returned rule fires every time until narrowed. */
    public Rule arm(FaultPoint point, Fault fault) {
        Rule r = new Rule(point, fault);
        rules.add(r);
        armed = true;
        return r;
    }

    public void disarm(Rule rule) {
        rules.remove(rule);
        armed = !rules.isEmpty();
    }

    public void disarmAll() {
        rules.clear();
        armed = false;
    }

    /** The fault to inject at {@code point} for this event, if any. */
    public Optional<Fault> check(FaultPoint point, FaultScope scope) {
        if (!armed) {
            return Optional.empty();
        }
        for (Rule r : rules) {
            if (r.point.equals(point) && r.matches(scope)) {
                LOG.info("fault injected at {} ({}): {} [seed {}]", point, scope, r.fault, seed);
                return Optional.of(r.fault);
            }
        }
        return Optional.empty();
    }

    /**
     * Fires a point that can only fail or crash: throws the armed {@link Fault.Fail} error, or
     * halts the process for {@link Fault.Crash}. Other faults are ignored here.
     */
    public void fire(FaultPoint point) {
        fire(point, FaultScope.NONE);
    }

    public void fire(FaultPoint point, FaultScope scope) {
        if (!armed) {
            return;
        }
        Optional<Fault> f = check(point, scope);
        if (f.isPresent()) {
            switch (f.get()) {
                case Fault.Fail fail -> throw fail.error();
                case Fault.Crash crash -> Runtime.getRuntime().halt(137);
                case Fault.Drop d -> { }
                case Fault.Delay d -> sleep(d);
                case Fault.Duplicate d -> { }
                case Fault.Disconnect d -> { }
            }
        }
    }

    private static void sleep(Fault.Delay d) {
        try {
            Thread.sleep(d.delay());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** One armed fault: where, what, when (a predicate), how often, how many times. */
    public final class Rule {
        private final FaultPoint point;
        private final Fault fault;
        private volatile Predicate<FaultScope> when = s -> true;
        private volatile double probability = 1.0;
        private final AtomicInteger remaining = new AtomicInteger(Integer.MAX_VALUE);
        private final AtomicInteger fired = new AtomicInteger();

        Rule(FaultPoint point, Fault fault) {
            this.point = point;
            this.fault = fault;
        }

        public Rule when(Predicate<FaultScope> predicate) {
            this.when = predicate;
            return this;
        }

        public Rule probability(double p) {
            if (p < 0 || p > 1) {
                throw new IllegalArgumentException("probability must be in [0,1], got " + p);
            }
            this.probability = p;
            return this;
        }

        public Rule times(int n) {
            remaining.set(n);
            return this;
        }

        /** How many times this rule has fired. */
        public int fired() {
            return fired.get();
        }

        private boolean matches(FaultScope scope) {
            if (!when.test(scope)) {
                return false;
            }
            if (probability < 1.0) {
                double draw;
                synchronized (random) {
                    draw = random.nextDouble();
                }
                if (draw >= probability) {
                    return false;
                }
            }
            if (remaining.getAndDecrement() <= 0) {
                remaining.set(0);
                return false;
            }
            fired.incrementAndGet();
            return true;
        }
    }
}
