package org.jccl.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void quotesEveryCharacterThatNeedsIt() {
        assertEquals("\"a\\\"b\\\\c\"", Json.quote("a\"b\\c"));
        assertEquals("\"\\n\\r\\t\\b\\f\"", Json.quote("\n\r\t\b\f"));
        assertEquals("\"\\u0000\\u001f\\u2028\"", Json.quote("\u0000\u001f\u2028"));
        assertEquals("\"h\u00e9llo \u65e5\u672c\"", Json.quote("h\u00e9llo \u65e5\u672c"));
        // And the parser reads back exactly what was quoted.
        String tricky = "q\"\\/\n\u0001\u2029\u00ff\ud83d\ude00 end";
        assertEquals(tricky, Json.parse(Json.quote(tricky)));
    }

    @Test
    void numbers() {
        assertEquals("3", Json.number(3.0));
        assertEquals("0.25", Json.number(0.25));
        assertEquals("null", Json.number(Double.NaN));
        assertEquals("null", Json.number(Double.POSITIVE_INFINITY));
        assertEquals(1.5e-7, (double) Json.parse(Json.number(1.5e-7)));
        assertEquals(-12L, Json.parse("-12"));
        assertEquals(1e30, (double) Json.parse("1000000000000000000000000000000"));
        assertEquals(2.5e3, (double) Json.parse("2.5E+3"));
    }

    @Test
    void parsesDocuments() {
        Object v = Json.parse(" {\"a\": [1, 2.5, \"x\", true, false, null, {}], \"b\": {\"c\": []}} ");
        Map<?, ?> m = (Map<?, ?>) v;
        assertEquals(List.of(1L, 2.5, "x", true, false), ((List<?>) m.get("a")).subList(0, 5));
        assertNull(((List<?>) m.get("a")).get(5));
        assertEquals(Map.of("c", List.of()), m.get("b"));
        assertEquals("\u00e9", Json.parse("\"\\u00e9\""));
    }

    @Test
    void rejectsMalformedDocumentsWithTheOffset() {
        for (String bad : new String[] {"", "{", "[1,]", "{\"a\" 1}", "\"abc", "tru", "01x", "{\"a\":1} x", "\"\\q\"",
            "\"\\u12\"", "\"a\nb\"", "[" .repeat(100) + "]".repeat(100), "-", "1.2.3"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
            assertTrue(e.getMessage().contains("offset"), e.getMessage());
        }
    }
}
