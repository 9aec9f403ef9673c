package rayon.yarn;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.apache.hadoop.conf.Configuration;

/**
 * The agent's settings, read from the ResourceManager's configuration (yarn-site.xml) at {@code init}.
 *
 * <p>Every key starts with {@code rayon.reservation-agent.}; docs/yarn.md lists them with their defaults.
 */
final class Settings {
  static final String PREFIX = "rayon.reservation-agent.";
  static final String URL = PREFIX + "url";
  static final String TOKEN = PREFIX + "token";
  static final String TOKEN_FILE = PREFIX + "token-file";
  static final String AGENT = PREFIX + "agent";
  static final String TIMEOUT_MS = PREFIX + "timeout-ms";
  static final String RETRIES = PREFIX + "retries";
  static final String FALLBACK = PREFIX + "fallback";
  static final String LOOKAHEAD_MS = PREFIX + "lookahead-ms";
  static final String MAX_STEPS = PREFIX + "max-steps";
  static final String ALIGNED = "org.apache.hadoop.yarn.server.resourcemanager.reservation.planning"
      + ".AlignedPlannerWithGreedy";
  static final String NO_FALLBACK = "none";

  final String url;
  final String token;
  final String agent;
  final long timeoutMs;
  final int retries;
  final String fallback;
  final long lookaheadMs;
  final long maxSteps;

  private Settings(Configuration conf) {
    String base = conf.getTrimmed(URL, "http://127.0.0.1:8080");
    url = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
    token = token(conf);
    agent = conf.getTrimmed(AGENT, "gree-l");
    timeoutMs = positive(conf, TIMEOUT_MS, 2000);
    retries = (int) Math.max(0, conf.getInt(RETRIES, 3));
    fallback = conf.getTrimmed(FALLBACK, ALIGNED);
    lookaheadMs = Math.max(0, conf.getLong(LOOKAHEAD_MS, 24L * 3600 * 1000));
    maxSteps = positive(conf, MAX_STEPS, 100_000);
  }

  /** The settings of this configuration; IllegalArgumentException names a key whose value cannot be used. */
  static Settings read(Configuration conf) {
    return new Settings(conf);
  }

  private static long positive(Configuration conf, String key, long otherwise) {
    long value = conf.getLong(key, otherwise);
    if (value <= 0) {
      throw new IllegalArgumentException(key + " must be a positive number, got " + value);
    }
    return value;
  }

  private static String token(Configuration conf) {
    String file = conf.getTrimmed(TOKEN_FILE);
    if (file == null || file.isEmpty()) {
      return conf.getTrimmed(TOKEN, "");
    }
    try {
      return new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8).trim();
    } catch (IOException e) {
      throw new IllegalArgumentException(TOKEN_FILE + ": cannot read " + file + ": " + e, e);
    }
  }
}
