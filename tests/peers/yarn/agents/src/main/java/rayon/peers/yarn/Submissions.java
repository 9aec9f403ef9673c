package rayon.peers.yarn;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.ReservationDefinition;
import org.apache.hadoop.yarn.api.records.ReservationRequest;
import org.apache.hadoop.yarn.api.records.ReservationRequestInterpreter;
import org.apache.hadoop.yarn.api.records.ReservationRequests;
import org.apache.hadoop.yarn.api.records.Resource;

/**
 * Reads the body of YARN's REST submission ({@code POST /ws/v1/cluster/reservation/submit}) into YARN's own
 * {@link ReservationDefinition}: the fields our rdl/forms/yarn.py writes, numbers as JSON numbers or strings.
 */
final class Submissions {

  private Submissions() {
  }

  /** The definition of one submission body; IllegalArgumentException names the field that is missing. */
  static ReservationDefinition definition(JsonNode body) {
    JsonNode definition = required(body, "reservation-definition");
    JsonNode requests = required(definition, "reservation-requests");
    List<ReservationRequest> stages = new ArrayList<>();
    JsonNode items = required(requests, "reservation-request");
    if (items.isArray()) {
      items.forEach(item -> stages.add(request(item)));
    } else {
      stages.add(request(items));  // YARN's JSON writes a one-element list as the element itself
    }
    ReservationRequests all = ReservationRequests.newInstance(stages, interpreter(requests));
    String recurrence = definition.path("recurrence-expression").asText("0");
    int priority = definition.path("priority").asInt(0);
    return ReservationDefinition.newInstance(number(definition, "arrival"), number(definition, "deadline"), all,
        definition.path("reservation-name").asText(""), recurrence, Priority.newInstance(priority));
  }

  private static ReservationRequest request(JsonNode item) {
    JsonNode capability = required(item, "capability");
    Resource bundle = Resource.newInstance(number(capability, "memory"), (int) number(capability, "vCores"));
    int containers = (int) number(item, "num-containers");
    int gang = item.has("min-concurrency") ? (int) number(item, "min-concurrency") : 1;
    return ReservationRequest.newInstance(bundle, containers, gang, number(item, "duration"));
  }

  private static ReservationRequestInterpreter interpreter(JsonNode requests) {
    JsonNode value = requests.get("reservation-request-interpreter");
    if (value == null || value.isNull()) {
      return ReservationRequestInterpreter.R_ALL;
    }
    if (value.isTextual() && !value.asText().matches("\\d+")) {
      return ReservationRequestInterpreter.valueOf(value.asText());
    }
    return ReservationRequestInterpreter.values()[value.asInt()];
  }

  private static long number(JsonNode node, String key) {
    JsonNode value = required(node, key);
    if (value.isNumber()) {
      return value.asLong();
    }
    return Long.parseLong(value.asText().trim());
  }

  private static JsonNode required(JsonNode node, String key) {
    JsonNode value = node.get(key);
    if (value == null || value.isNull()) {
      throw new IllegalArgumentException("the submission has no `" + key + "`");
    }
    return value;
  }
}
