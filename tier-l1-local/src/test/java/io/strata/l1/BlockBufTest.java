package io.strata.l1;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import org.junit.jupiter.api.Test;

/** The property the cache's lock-free readers rely on: a released block cannot be retained again. */
class BlockBufTest {
    @Test
    void aReleasedBlockCannotBeRetainedAndItsMemoryGoesBack() {
        ByteBuf b = BlockBuf.allocate(1 << 20);
        assertThat(b.capacity()).isEqualTo(1 << 20);
        assertThat(b.readableBytes()).isZero();
        b.writeLong(42);
        ByteBuf view = b.asReadOnly();
        ByteBuf slice = view.retainedSlice(0, 8);
        assertThat(b.refCnt()).isEqualTo(2);
        assertThat(slice.isReadOnly()).isTrue();
        assertThat(slice.getLong(0)).isEqualTo(42);
        slice.release();
        view.release();
        assertThat(b.refCnt()).isZero();
        assertThatThrownBy(view::retain).isInstanceOf(IllegalReferenceCountException.class);
        assertThat(b.refCnt()).isZero();
        ByteBuf empty = BlockBuf.allocate(0);
        assertThat(empty.readableBytes()).isZero();
        assertThat(empty.release()).isTrue();
    }
}
