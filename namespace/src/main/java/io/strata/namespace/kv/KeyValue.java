package io.strata.namespace.kv;

import java.util.Arrays;
import java.util.HexFormat;

/** One key and its value, as a range read returns them. Both arrays are owned by the caller. */
public record KeyValue(byte[] key, byte[] value) {
    @Override
    public boolean equals(Object o) {
        return o instanceof KeyValue kv && Arrays.equals(kv.key, key) && Arrays.equals(kv.value, value);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(key) * 31 + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
        return HexFormat.of().formatHex(key) + "=" + HexFormat.of().formatHex(value);
    }
}
