package org.jccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import org.jccl.internal.Settings;
import org.junit.jupiter.api.Test;

/** {@link Options#withSetting}: which names it takes, the errors for the others, and how reads see it. */
class OptionsSettingsTest {

    @Test
    void settingsAreKeptSortedImmutableAndRemovedWithNull() {
        Options o = Options.of(0, 1).withSetting("JCCL_ALGO", "ring").withSetting("JCCL_CHECK", "1");
        assertEquals(Map.of("JCCL_ALGO", "ring", "JCCL_CHECK", "1"), o.settings());
        assertEquals("[JCCL_ALGO, JCCL_CHECK]", o.settings().keySet().toString());
        assertThrows(UnsupportedOperationException.class, () -> o.settings().put("JCCL_ALGO", "rhd"));
        assertEquals(Map.of("JCCL_CHECK", "1"), o.withSetting("JCCL_ALGO", null).settings());
        // the other withers keep them
        assertEquals(o.settings(), o.withTimeout(Duration.ofSeconds(5)).withRank(0, 2).withHeartbeat(Duration.ZERO).settings());
        assertTrue(o.toString().contains("settings={JCCL_ALGO=ring, JCCL_CHECK=1}"), o.toString());
        assertEquals(Map.of(), Options.of(0, 1).settings());
    }

    @Test
    void namesThatAreNotPerCommunicatorAreRefusedSayingHowToSetThem() {
        Options o = Options.of(0, 1);
        String unknown = assertThrows(IllegalArgumentException.class, () -> o.withSetting("JCCL_ALGORITHM", "ring")).getMessage();
        assertTrue(unknown.contains("unknown setting 'JCCL_ALGORITHM'") && unknown.contains("JCCL_ALGO"), unknown);
        String job = assertThrows(IllegalArgumentException.class, () -> o.withSetting("JCCL_TIMEOUT", "5s")).getMessage();
        assertTrue(job.contains("Options.withTimeout"), job);
        String process = assertThrows(IllegalArgumentException.class, () -> o.withSetting("JCCL_DEBUG", "INFO")).getMessage();
        assertTrue(process.contains("once per process") && process.contains("jccl.debug"), process);
        assertTrue(assertThrows(NullPointerException.class, () -> o.withSetting(null, "x")).getMessage().contains("variable"));
        // the canonical constructor checks a map it is given the same way
        String viaMap = assertThrows(IllegalArgumentException.class, () -> new Options(0, 1, 0, 1, "h", 1, "j", null,
                Duration.ofSeconds(1), null, null, null, Duration.ZERO, Map.of("JCCL_NCCL_LIBRARY", "/x"))).getMessage();
        assertTrue(viaMap.contains("JCCL_NCCL_LIBRARY"), viaMap);
    }

    @Test
    void aBoundSettingWinsOverThePropertyInsideItsScopeOnly() {
        String before = System.getProperty("jccl.algo");
        System.setProperty("jccl.algo", "oneshot");
        try {
            assertEquals("ring", Settings.with(Map.of("JCCL_ALGO", "ring"), () -> Settings.get("JCCL_ALGO")));
            assertEquals("ring", Settings.with(Map.of("JCCL_ALGO", "ring"),
                    () -> Settings.with(Map.of("JCCL_CHECK", "1"), () -> Settings.environment().get("JCCL_ALGO"))));
            assertEquals("oneshot", Settings.get("JCCL_ALGO"));
            assertEquals(Map.of(), Settings.bound());
        } finally {
            if (before == null) {
                System.clearProperty("jccl.algo");
            } else {
                System.setProperty("jccl.algo", before);
            }
        }
    }
}
