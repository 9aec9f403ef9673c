package rayon.yarn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.PlanningException;

/** Posts a placement request to {@code rayon serve} ({@code POST /v1/placement}) and reads its answer. */
final class RayonClient {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Our service did not answer in time, or not at all, or answered that it cannot (5xx). */
  static final class Unreachable extends Exception {
    private static final long serialVersionUID = 1L;

    Unreachable(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private final Settings settings;
  private final HttpClient http;

  RayonClient(Settings settings) {
    this.settings = settings;
    // HTTP/1.1: the JDK client would otherwise ask a plain-HTTP server to upgrade to h2c on every request (rayon
    // serve ignores that and keeps the body since issue #33, but older servers lost it and answered 400)
    this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofMillis(settings.timeoutMs)).build();
  }

  String endpoint() {
    return settings.url + "/v1/placement";
  }

  /** The decision record; Unreachable when the service cannot decide, PlanningException for an answer refused. */
  JsonNode place(JsonNode request) throws Unreachable, PlanningException {
    HttpRequest.Builder post = HttpRequest.newBuilder(URI.create(endpoint()))
        .timeout(Duration.ofMillis(settings.timeoutMs))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(request.toString()));
    if (!settings.token.isEmpty()) {
      post.header("Authorization", "Bearer " + settings.token);
    }
    HttpResponse<String> response;
    try {
      response = http.send(post.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new Unreachable(endpoint() + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Unreachable(endpoint() + ": interrupted", e);
    }
    int status = response.statusCode();
    if (status >= 500) {
      throw new Unreachable(endpoint() + " answered " + status + ": " + message(response.body()), null);
    }
    if (status != 200) {
      String hint = status == 401 ? " (check " + Settings.TOKEN + " or " + Settings.TOKEN_FILE + ")" : "";
      throw new PlanningException("rayon at " + endpoint() + " refused the request (" + status + "): "
          + message(response.body()) + hint);
    }
    try {
      return JSON.readTree(response.body());
    } catch (IOException e) {
      throw new Unreachable(endpoint() + " answered something that is not JSON: " + e, e);
    }
  }

  private static String message(String body) {
    try {
      JsonNode error = JSON.readTree(body).path("error");
      if (error.has("message")) {
        return error.get("message").asText() + (error.has("hint") ? " (" + error.get("hint").asText() + ")" : "");
      }
    } catch (IOException e) {
      // not our error body: show it as it came
    }
    return body.length() > 500 ? body.substring(0, 500) + "..." : body;
  }
}
