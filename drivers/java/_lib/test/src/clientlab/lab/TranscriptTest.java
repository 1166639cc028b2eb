package clientlab.lab;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The golden transcript (drivers/contract/transcript.json) through the helper's message loop,
 * with the transcript's contract client behind {@link Driver}. Usage: TranscriptTest
 * TRANSCRIPT.json; exit status 0 when every case passed. The Kotlin helper's test runs it with its
 * own contract client ({@link #run}).
 */
public final class TranscriptTest {
    private static final Pattern STATUS = Pattern.compile("/status/(\\d{3})");

    /** The transcript's {@code client}. */
    static final class ContractClient extends Driver {
        private boolean verify;

        ContractClient() {
            super("tcp_nodelay", ANY, "expect_100", List.of(false));
        }

        @Override
        protected void versions(Map<String, String> versions) {
            versions.put("contract", "1");
        }

        @Override
        public String refuse(Job job) {
            return job.scenario.equals("refused-by-client") ? "the contract client refuses this job" : null;
        }

        @Override
        public void open(Job job) throws Exception {
            if (job.scenario.equals("open-fails")) {
                throw new IOException("the contract client cannot be built");
            }
            verify = job.verify;
        }

        @Override
        public Response request(Request req) throws Exception {
            if (req.url.contains("/fail")) {
                throw new IOException("connection refused");
            }
            Matcher status = STATUS.matcher(req.url);
            return Response.of(status.find() ? Integer.parseInt(status.group(1)) : 200, "1.1",
                    req.url.getBytes(StandardCharsets.UTF_8), verify);
        }
    }

    /** The transcript's comparison: equal JSON, where a <...> string in {@code want} is a pattern. */
    static boolean matches(JsonNode want, JsonNode got) {
        if (want.isTextual() && want.asText().startsWith("<") && want.asText().endsWith(">")) {
            String w = want.asText();
            if (w.equals("<any string>")) {
                return got.isTextual();
            }
            if (w.equals("<any number>")) {
                return got.isNumber() && got.asDouble() >= 0;
            }
            if (w.startsWith("<text with: ")) {
                return got.isTextual() && got.asText().contains(w.substring(12, w.length() - 1));
            }
        }
        if (want.isObject()) {
            if (!got.isObject()) {
                return false;
            }
            JsonNode rest = want.get("<more>");
            for (Iterator<Map.Entry<String, JsonNode>> it = want.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> f = it.next();
                if (!f.getKey().equals("<more>") && (!got.has(f.getKey()) || !matches(f.getValue(), got.get(f.getKey())))) {
                    return false;
                }
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = got.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> f = it.next();
                if (!want.has(f.getKey()) && (rest == null || !matches(rest, f.getValue()))) {
                    return false;
                }
            }
            return true;
        }
        if (want.isArray()) {
            if (!got.isArray() || got.size() != want.size()) {
                return false;
            }
            for (int i = 0; i < want.size(); i++) {
                if (!matches(want.get(i), got.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (want.isNumber() && got.isNumber()) { // 1 and 1.0 are not the same value here
            return want.isIntegralNumber() == got.isIntegralNumber() && want.asText().equals(got.asText());
        }
        return want.equals(got);
    }

    /** The lab lines through the loop (a new driver's), System.in holding them; the answers. */
    static List<JsonNode> talk(Driver driver, JsonNode lab) throws IOException {
        StringBuilder input = new StringBuilder();
        for (JsonNode m : lab) {
            input.append(m.isTextual() ? m.asText() : Lab.JSON.writeValueAsString(m)).append('\n');
        }
        InputStream stdin = System.in;
        PrintStream log = System.err;
        StringWriter out = new StringWriter();
        try {
            System.setIn(new ByteArrayInputStream(input.toString().getBytes(StandardCharsets.UTF_8)));
            System.setErr(new PrintStream(OutputStream.nullOutputStream())); // the helper's log; its answers count
            new Lab(driver, out).run();
        } finally {
            System.setIn(stdin);
            System.setErr(log);
        }
        List<JsonNode> got = new ArrayList<>();
        for (String line : out.toString().split("\n")) {
            if (!line.isEmpty()) {
                got.add(Lab.JSON.readTree(line));
            }
        }
        return got;
    }

    public static void main(String[] args) throws IOException {
        System.exit(run(args, ContractClient::new));
    }

    /** Every case of the transcript named by args[0], each on a new driver; 0 when all passed. */
    public static int run(String[] args, Supplier<Driver> newDriver) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: TranscriptTest TRANSCRIPT.json");
            return 2;
        }
        JsonNode transcript = Lab.JSON.readTree(Files.readString(Path.of(args[0])));
        int failed = 0;
        for (JsonNode c : transcript.get("cases")) {
            JsonNode got = Lab.JSON.valueToTree(talk(newDriver.get(), c.get("lab")));
            boolean ok = matches(c.get("driver"), got);
            if (!ok) {
                System.out.println("FAIL " + c.get("name").asText() + ": " + c.get("about").asText() + "\n     want " + c.get("driver") + "\n     got  " + got);
                failed++;
            }
        }
        JsonNode a = Lab.JSON.readTree("{\"a\":\"<text with: bad>\",\"<more>\":\"<any string>\"}");
        JsonNode b = Lab.JSON.readTree("{\"a\":\"a bad job\",\"b\":\"x\"}");
        if (!matches(a, b) || matches(Lab.JSON.readTree("{\"a\":1}"), Lab.JSON.readTree("{\"a\":1,\"b\":\"x\"}"))
                || matches(Lab.JSON.readTree("[1,2]"), Lab.JSON.readTree("[2,1]"))
                || matches(Lab.JSON.readTree("\"<any number>\""), Lab.JSON.readTree("true"))
                || matches(Lab.JSON.readTree("1"), Lab.JSON.readTree("1.0"))) {
            System.out.println("FAIL the comparison takes patterns and nothing else");
            failed++;
        }
        System.out.println("transcript: " + transcript.get("cases").size() + " case(s), " + failed + " failed");
        return failed == 0 ? 0 : 1;
    }
}
