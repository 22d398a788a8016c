package io.strata.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.strata.core.rpc.CoreMessages;
import io.strata.protocol.meta.MetaMessages;
import io.strata.protocol.mgmtd.MgmtdMessages;
import io.strata.protocol.storage.StorageMessages;
import org.junit.jupiter.api.Test;

/** Every message family stays in its range, and the ranges never overlap. */
class TagRangeTest {
    @Test
    void eachFamilyStaysInItsRange() {
        TagRange.CORE.check(CoreMessages.TYPES);
        TagRange.STORAGE.check(StorageMessages.TYPES);
        TagRange.MGMTD.check(MgmtdMessages.TYPES);
        TagRange.META.check(MetaMessages.TYPES);
        assertThatThrownBy(() -> TagRange.L2.check(StorageMessages.TYPES)).hasMessageContaining("outside L2");
    }

    @Test
    void rangesDoNotOverlap() {
        TagRange[] all = TagRange.values();
        for (int i = 1; i < all.length; i++) {
            assertThat(all[i].first()).as("%s starts after %s ends", all[i], all[i - 1]).isGreaterThan(all[i - 1].last());
        }
    }
}
