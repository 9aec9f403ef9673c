package rayon.yarn;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.hadoop.yarn.api.records.ReservationDefinition;
import org.apache.hadoop.yarn.api.records.ReservationId;
import org.apache.hadoop.yarn.api.records.ReservationRequest;
import org.apache.hadoop.yarn.api.records.ReservationRequests;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.ContractValidationException;

/** YARN's ReservationDefinition as the body of its REST submission, which our placement endpoint reads. */
final class Requests {
  private Requests() {
  }

  /** The contract's period in ms ({@code recurrence-expression}), 0 when it does not recur. */
  static long period(ReservationDefinition contract) throws ContractValidationException {
    String recurrence = contract.getRecurrenceExpression();
    if (recurrence == null || recurrence.isBlank()) {
      return 0;
    }
    try {
      return Math.max(0, Long.parseLong(recurrence.trim()));
    } catch (NumberFormatException e) {
      throw new ContractValidationException("recurrence-expression " + recurrence + " is no period in ms");
    }
  }

  /** {queue, reservation-id, reservation-definition} as {@code POST /ws/v1/cluster/reservation/submit} takes it. */
  static ObjectNode submission(ReservationId id, String queue, ReservationDefinition contract) {
    ObjectNode body = JsonNodeFactory.instance.objectNode();
    body.put("queue", queue);
    body.put("reservation-id", id.toString());
    ObjectNode definition = body.putObject("reservation-definition");
    definition.put("arrival", contract.getArrival());
    definition.put("deadline", contract.getDeadline());
    String name = contract.getReservationName();
    definition.put("reservation-name", name == null || name.isEmpty() ? id.toString() : name);
    definition.put("priority", contract.getPriority() == null ? 0 : contract.getPriority().getPriority());
    ReservationRequests requests = contract.getReservationRequests();
    ObjectNode stages = definition.putObject("reservation-requests");
    stages.put("reservation-request-interpreter", requests.getInterpreter().ordinal());
    ArrayNode items = stages.putArray("reservation-request");
    for (ReservationRequest request : requests.getReservationResources()) {
      ObjectNode item = items.addObject();
      Resource capability = request.getCapability();
      ObjectNode bundle = item.putObject("capability");
      bundle.put("memory", capability.getMemorySize());
      bundle.put("vCores", capability.getVirtualCores());
      item.put("num-containers", request.getNumContainers());
      item.put("min-concurrency", request.getConcurrency());
      item.put("duration", request.getDuration());
    }
    return body;
  }
}
