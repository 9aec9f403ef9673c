package rayon.yarn;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.ReservationDefinition;
import org.apache.hadoop.yarn.api.records.ReservationRequest;
import org.apache.hadoop.yarn.api.records.ReservationRequestInterpreter;
import org.apache.hadoop.yarn.api.records.ReservationRequests;
import org.apache.hadoop.yarn.api.records.Resource;

/** YARN's REST submission body (as rdl/forms/yarn.py writes it) read into YARN's own ReservationDefinition. */
final class Bodies {
  private Bodies() {
  }

  static ReservationDefinition definition(JsonNode body) {
    JsonNode definition = body.get("reservation-definition");
    JsonNode requests = definition.get("reservation-requests");
    List<ReservationRequest> stages = new ArrayList<>();
    JsonNode items = requests.get("reservation-request");
    if (items.isArray()) {
      items.forEach(item -> stages.add(request(item)));
    } else {
      stages.add(request(items));
    }
    JsonNode interpreter = requests.path("reservation-request-interpreter");
    ReservationRequestInterpreter how = interpreter.isMissingNode() || interpreter.isNull()
        ? ReservationRequestInterpreter.R_ALL : ReservationRequestInterpreter.values()[interpreter.asInt()];
    return ReservationDefinition.newInstance(definition.get("arrival").asLong(), definition.get("deadline").asLong(),
        ReservationRequests.newInstance(stages, how), definition.path("reservation-name").asText(""),
        definition.path("recurrence-expression").asText("0"),
        Priority.newInstance(definition.path("priority").asInt(0)));
  }

  private static ReservationRequest request(JsonNode item) {
    JsonNode capability = item.get("capability");
    Resource bundle = Resource.newInstance(capability.get("memory").asLong(), capability.get("vCores").asInt());
    return ReservationRequest.newInstance(bundle, item.get("num-containers").asInt(),
        item.path("min-concurrency").asInt(1), item.get("duration").asLong());
  }
}
