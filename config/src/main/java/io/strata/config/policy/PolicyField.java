package io.strata.config.policy;

import io.strata.config.Durations;
import io.strata.core.DataSize;
import io.strata.core.tier.QosClass;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;

/**
 * The settable policy fields, by the key users type ({@code strata policy set DIR key=value}).
 * Each knows how to parse and check its value, read it from a {@link Policy}, and apply it.
 */
public enum PolicyField {
    STRIPE_CHUNK_SIZE("stripe.chunk-size", "chunk size of new files: a power of two, 64KiB..64MiB"),
    STRIPE_WIDTH("stripe.width", "chains a file is striped over: 1..4096 (at most the chain table's size)"),
    REPLICAS("replicas", "L3 replicas: 1..5"),
    REPLICAS_MIN_ACK("replicas.min-ack", "fewest L3 replicas that store a write before it is acknowledged: 1..5 (capped at replicas)"),
    TIERS_L1("tiers.l1", "use the client's L1 cache: on | off"),
    TIERS_L2("tiers.l2", "use the L2 pool: off | stage | prefetch"),
    L2_REPLICAS("l2.replicas", "copies of each staged chunk in the L2 pool, on distinct agents: 1..5"),
    DURABILITY("durability", "where fsync/close waits: l3 | l2"),
    CONSISTENCY("consistency", "strict | close-to-open | immutable"),
    WRITE_BACK("write-back", "L1 absorbs small writes: on | off"),
    WRITE_BACK_MAX_AGE("write-back.max-age", "flush absorbed writes after: 10ms..1h"),
    WRITE_BACK_MAX_BYTES("write-back.max-bytes", "flush when a file has absorbed: 4KiB..1GiB"),
    QOS("qos", "interactive | training-read | checkpoint | background"),
    TTL("ttl", "L1 retention after last use: a duration, or none"),
    PIN("pin", "keep in the L1 NVMe tier regardless of eviction: on | off"),
    PROFILE("profile", "none | checkpoint (this directory becomes a checkpoint root: tiers.l2=stage durability=l2 stripe.width=16 qos=checkpoint)"),
    CHECKPOINT_KEEP_LAST("checkpoint.keep-last", "newest committed generations a checkpoint root keeps: 1..100000"),
    CHECKPOINT_KEEP_EVERY("checkpoint.keep-every", "also keep every K-th committed generation: 0 (off)..1000000"),
    CHECKPOINT_GRACE("checkpoint.grace", "an uncommitted generation with no writer left is removed after: 1s..30d");

    private final String key;
    private final String help;

    PolicyField(String key, String help) {
        this.key = key;
        this.help = help;
    }

    public String key() {
        return key;
    }

    public String help() {
        return help;
    }

    public static PolicyField byKey(String key) {
        for (PolicyField f : values()) {
            if (f.key.equals(key)) {
                return f;
            }
        }
        StringBuilder keys = new StringBuilder();
        for (PolicyField f : values()) {
            keys.append(keys.isEmpty() ? "" : ", ").append(f.key);
        }
        throw new PolicyException(key, "unknown policy field (fields: " + keys + ")");
    }

    /** Parses and checks {@code raw}; returns its canonical spelling. */
    public String normalize(String raw) {
        return format(parse(raw));
    }

    /** The value of this field in {@code p}, spelled as {@code policy get} prints it. */
    public String get(Policy p) {
        return format(value(p));
    }

    /** The typed value of this field in {@code p}. */
    Object value(Policy p) {
        return switch (this) {
            case STRIPE_CHUNK_SIZE -> p.chunkSize();
            case STRIPE_WIDTH -> p.stripeWidth();
            case REPLICAS -> p.replicas();
            case REPLICAS_MIN_ACK -> p.minAck();
            case TIERS_L1 -> p.l1();
            case TIERS_L2 -> p.l2();
            case L2_REPLICAS -> p.l2Replicas();
            case DURABILITY -> p.durability();
            case CONSISTENCY -> p.consistency();
            case WRITE_BACK -> p.writeBack();
            case WRITE_BACK_MAX_AGE -> p.writeBackMaxAge();
            case WRITE_BACK_MAX_BYTES -> p.writeBackMaxBytes();
            case QOS -> p.qos();
            case TTL -> p.ttl();
            case PIN -> p.pin();
            case PROFILE -> p.profile();
            case CHECKPOINT_KEEP_LAST -> p.keepLast();
            case CHECKPOINT_KEEP_EVERY -> p.keepEvery();
            case CHECKPOINT_GRACE -> p.grace();
        };
    }

    /** Builds a policy from one typed value per field; the combination is checked once. */
    @SuppressWarnings("unchecked")
    static Policy build(java.util.EnumMap<PolicyField, Object> v) {
        return new Policy((DataSize) v.get(STRIPE_CHUNK_SIZE), (Integer) v.get(STRIPE_WIDTH), (Integer) v.get(REPLICAS),
                (Boolean) v.get(TIERS_L1), (L2Mode) v.get(TIERS_L2), (Durability) v.get(DURABILITY),
                (Consistency) v.get(CONSISTENCY), (Boolean) v.get(WRITE_BACK), (Duration) v.get(WRITE_BACK_MAX_AGE),
                (DataSize) v.get(WRITE_BACK_MAX_BYTES), (QosClass) v.get(QOS), (Optional<Duration>) v.get(TTL),
                (Boolean) v.get(PIN), (Profile) v.get(PROFILE), (Integer) v.get(CHECKPOINT_KEEP_LAST),
                (Integer) v.get(CHECKPOINT_KEEP_EVERY), (Duration) v.get(CHECKPOINT_GRACE), (Integer) v.get(REPLICAS_MIN_ACK),
                (Integer) v.get(L2_REPLICAS));
    }

    Object parse(String raw) {
        if (raw == null || raw.isBlank()) {
            throw new PolicyException(key, "needs a value (" + help + ")");
        }
        String s = raw.trim();
        try {
            Object v = switch (this) {
                case STRIPE_CHUNK_SIZE, WRITE_BACK_MAX_BYTES -> DataSize.parse(s);
                case STRIPE_WIDTH, REPLICAS, REPLICAS_MIN_ACK, L2_REPLICAS, CHECKPOINT_KEEP_LAST, CHECKPOINT_KEEP_EVERY -> Integer.parseInt(s);
                case PROFILE -> enumOf(Profile.class, s);
                case CHECKPOINT_GRACE -> Durations.parse(s);
                case TIERS_L1, WRITE_BACK, PIN -> onOff(s);
                case TIERS_L2 -> enumOf(L2Mode.class, s);
                case DURABILITY -> enumOf(Durability.class, s);
                case CONSISTENCY -> enumOf(Consistency.class, s);
                case WRITE_BACK_MAX_AGE -> Durations.parse(s);
                case QOS -> QosClass.parse(s);
                case TTL -> s.equals("none") ? Optional.<Duration>empty() : Optional.of(Durations.parse(s));
            };
            if (v instanceof Optional<?> o) {
                o.ifPresent(this::check);
            } else {
                check(v);
            }
            return v;
        } catch (PolicyException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            throw new PolicyException(key, "bad value \"" + raw + "\": " + e.getMessage() + " (" + help + ")");
        }
    }

    /** Checks a typed value's range; throws a {@link PolicyException} naming this field. */
    void check(Object v) {
        switch (this) {
            case STRIPE_CHUNK_SIZE -> {
                DataSize d = (DataSize) v;
                if (!d.isPowerOfTwo() || d.bytes() < 64 * 1024 || d.bytes() > 64L * 1024 * 1024) {
                    throw new PolicyException(key, "must be a power of two between 64KiB and 64MiB, got " + d);
                }
            }
            case STRIPE_WIDTH -> range((Integer) v, 1, Policy.MAX_STRIPE_WIDTH);
            case REPLICAS, REPLICAS_MIN_ACK, L2_REPLICAS -> range((Integer) v, 1, 5);
            case CHECKPOINT_KEEP_LAST -> range((Integer) v, 1, 100_000);
            case CHECKPOINT_KEEP_EVERY -> range((Integer) v, 0, 1_000_000);
            case CHECKPOINT_GRACE -> {
                Duration d = (Duration) v;
                if (d.compareTo(Duration.ofSeconds(1)) < 0 || d.compareTo(Duration.ofDays(30)) > 0) {
                    throw new PolicyException(key, "must be between 1s and 30d, got " + Durations.format(d));
                }
            }
            case WRITE_BACK_MAX_AGE -> {
                Duration d = (Duration) v;
                if (d.compareTo(Duration.ofMillis(10)) < 0 || d.compareTo(Duration.ofHours(1)) > 0) {
                    throw new PolicyException(key, "must be between 10ms and 1h, got " + Durations.format(d));
                }
            }
            case WRITE_BACK_MAX_BYTES -> {
                DataSize d = (DataSize) v;
                if (d.bytes() < 4096 || d.bytes() > (1L << 30)) {
                    throw new PolicyException(key, "must be between 4KiB and 1GiB, got " + d);
                }
            }
            case TTL -> {
                Duration d = (Duration) v;
                if (d.isNegative() || d.isZero()) {
                    throw new PolicyException(key, "must be positive, got " + Durations.format(d));
                }
            }
            default -> { }
        }
    }

    private void range(int v, int min, int max) {
        if (v < min || v > max) {
            throw new PolicyException(key, "must be between " + min + " and " + max + ", got " + v);
        }
    }

    private static boolean onOff(String s) {
        return switch (s.toLowerCase(Locale.ROOT)) {
            case "on", "true", "yes" -> true;
            case "off", "false", "no" -> false;
            default -> throw new IllegalArgumentException("expected on or off");
        };
    }

    private static <E extends Enum<E>> E enumOf(Class<E> type, String s) {
        String norm = s.toUpperCase(Locale.ROOT).replace('-', '_');
        for (E e : type.getEnumConstants()) {
            if (e.name().equals(norm)) {
                return e;
            }
        }
        throw new IllegalArgumentException("not one of the allowed values");
    }

    private static String format(Object v) {
        return switch (v) {
            case Boolean b -> b ? "on" : "off";
            case Duration d -> Durations.format(d);
            case Optional<?> o -> o.map(PolicyField::format).orElse("none");
            case QosClass q -> q.policyName();
            case Consistency c -> c.policyName();
            case Durability d -> d.policyName();
            case L2Mode m -> m.policyName();
            case Profile pr -> pr.policyName();
            default -> String.valueOf(v);
        };
    }
}
