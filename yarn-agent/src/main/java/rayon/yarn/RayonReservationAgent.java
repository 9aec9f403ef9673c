package rayon.yarn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.util.ReflectionUtils;
import org.apache.hadoop.yarn.api.records.ReservationDefinition;
import org.apache.hadoop.yarn.api.records.ReservationId;
import org.apache.hadoop.yarn.api.records.ReservationRequest;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.InMemoryReservationAllocation;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.Plan;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationAllocation;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationInterval;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.ContractValidationException;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.PlanningException;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.PlanningQuotaException;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.ResourceOverCommitException;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.ReservationAgent;
import org.apache.hadoop.yarn.util.resource.Resources;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Our planner as a reservable queue's reservation agent inside YARN's ResourceManager.
 *
 * <p>On each create or update it sends the ReservationDefinition and what YARN's plan has free over the window
 * ({@code getAvailableResourceOverTime}: YARN's own view is the truth, we keep no copy) to {@code rayon serve}'s
 * {@code POST /v1/placement}, and writes the answer into YARN's plan as YARN's own agents do
 * ({@link InMemoryReservationAllocation}, {@code plan.addReservation}), where the plan's sharing policy validates
 * it under its write lock. A rejection is a {@link PlanningException} carrying our reason and the earliest
 * deadline that would fit. When the plan changed between reading what is free and writing the answer (YARN
 * refuses the write as over-committing), it places again, up to {@code retries} times. When our service does
 * not answer within the timeout, YARN's own agent (the fallback) decides, and the log says so.
 */
public class RayonReservationAgent implements ReservationAgent {
  private static final Logger LOG = LoggerFactory.getLogger(RayonReservationAgent.class);

  private Settings settings;
  private RayonClient client;
  private ReservationAgent fallback;

  @Override
  public void init(Configuration conf) {
    settings = Settings.read(conf);
    client = new RayonClient(settings);
    fallback = null;
    if (!Settings.NO_FALLBACK.equals(settings.fallback)) {
      try {
        Class<?> chosen = conf.getClassByName(settings.fallback);
        fallback = (ReservationAgent) ReflectionUtils.newInstance(chosen, conf);
        fallback.init(conf);
      } catch (ClassNotFoundException | ClassCastException e) {
        throw new IllegalArgumentException(Settings.FALLBACK + ": " + settings.fallback
            + " is no ReservationAgent on the class path", e);
      }
    }
    LOG.info("rayon reservation agent: agent {} at {}, timeout {} ms, fallback {}", settings.agent,
        client.endpoint(), settings.timeoutMs, fallback == null ? "none" : settings.fallback);
  }

  @Override
  public boolean createReservation(ReservationId id, String user, Plan plan, ReservationDefinition contract)
      throws PlanningException {
    return place(id, user, plan, contract, false);
  }

  @Override
  public boolean updateReservation(ReservationId id, String user, Plan plan, ReservationDefinition contract)
      throws PlanningException {
    return place(id, user, plan, contract, true);
  }

  @Override
  public boolean deleteReservation(ReservationId id, String user, Plan plan) throws PlanningException {
    return plan.deleteReservation(id);
  }

  private boolean place(ReservationId id, String user, Plan plan, ReservationDefinition contract, boolean update)
      throws PlanningException {
    withinMaximumAllocation(plan, contract);
    long period = Requests.period(contract);
    if (period > 0) {
      return recurring(id, user, plan, contract, update, period);
    }
    for (int attempt = 0; ; attempt++) {
      JsonNode answer;
      try {
        answer = client.place(request(id, user, plan, contract));
      } catch (RayonClient.Unreachable e) {
        return fallBack(id, user, plan, contract, update, e);
      }
      ReservationAllocation allocation = allocation(id, user, plan, contract, answer);
      try {
        return update ? plan.updateReservation(allocation) : plan.addReservation(allocation, false);
      } catch (PlanningException e) {
        if (!changedUnderUs(e)) {
          throw e;
        }
        if (attempt >= settings.retries) {
          throw new PlanningException("rayon placed " + id + " " + (attempt + 1) + " times and YARN's plan had "
              + "changed under it each time: " + e.getMessage(), e);
        }
        LOG.info("YARN's plan changed under {} between reading what is free and writing rayon's answer ({}): "
            + "placing it again", id, e.getMessage());
      }
    }
  }

  /**
   * Whether YARN refused the write because the plan no longer has room for it: NoOverCommitPolicy says so with a
   * ResourceOverCommitException, CapacityOverTimePolicy (the CapacityScheduler's default) wraps that exception in a
   * PlanningQuotaException. Our answer fitted what was free when the agent read the plan, so the plan changed.
   */
  static boolean changedUnderUs(PlanningException refusal) {
    return refusal instanceof ResourceOverCommitException
        || refusal instanceof PlanningQuotaException && refusal.getCause() instanceof ResourceOverCommitException;
  }

  /**
   * A recurring reservation is YARN's fallback agent's to decide: written as ours are, with absolute times, YARN
   * 3.4.1's plan did not hold it in its next period (a one-off there was accepted), so the agent does not place one.
   */
  private boolean recurring(ReservationId id, String user, Plan plan, ReservationDefinition contract,
      boolean update, long period) throws PlanningException {
    if (fallback == null) {
      throw new PlanningException("rayon's agent places reservations that do not recur; " + id + " recurs every "
          + period + " ms and no fallback agent is set (" + Settings.FALLBACK + "=none)");
    }
    LOG.info("{} recurs every {} ms: YARN's {} decides it (rayon's agent places reservations that do not recur)",
        id, period, fallback.getClass().getSimpleName());
    return update ? fallback.updateReservation(id, user, plan, contract)
        : fallback.createReservation(id, user, plan, contract);
  }

  private boolean fallBack(ReservationId id, String user, Plan plan, ReservationDefinition contract,
      boolean update, RayonClient.Unreachable why) throws PlanningException {
    if (fallback == null) {
      LOG.warn("rayon is unreachable ({}) and no fallback is set ({}=none): {} is rejected", why.getMessage(),
          Settings.FALLBACK, id);
      throw new PlanningException("rayon is unreachable (" + why.getMessage() + "); no fallback agent is set");
    }
    LOG.warn("rayon is unreachable ({}): YARN's {} decides {} instead", why.getMessage(),
        fallback.getClass().getSimpleName(), id);
    return update ? fallback.updateReservation(id, user, plan, contract)
        : fallback.createReservation(id, user, plan, contract);
  }

  /** YARN's own agents refuse a container larger than the scheduler's maximum allocation: so does this one. */
  private static void withinMaximumAllocation(Plan plan, ReservationDefinition contract)
      throws ContractValidationException {
    Resource most = plan.getMaximumAllocation();
    for (ReservationRequest request : contract.getReservationRequests().getReservationResources()) {
      Resource asked = request.getCapability();
      if (!Resources.fitsIn(plan.getResourceCalculator(), asked, most)) {
        throw new ContractValidationException("a container of " + asked + " is larger than the scheduler's "
            + "maximum allocation " + most + ": no agent can place it");
      }
    }
  }

  /** The placement request: the reservation, and what the plan has free from now (or its arrival) on. */
  private ObjectNode request(ReservationId id, String user, Plan plan, ReservationDefinition contract)
      throws PlanningException {
    long planStep = Math.max(1000, plan.getStep());
    long now = System.currentTimeMillis();
    long from = Math.max(now, contract.getArrival());
    long window = Math.max(contract.getDeadline() - from, 0);
    long until = contract.getDeadline() + Math.min(window, settings.lookaheadMs);
    long step = planStep * Math.max(1, ceil(ceil(until - from, planStep), settings.maxSteps));
    step = ceil(step, 1000) * 1000;  // our plan steps are whole seconds
    long start = Math.floorDiv(from, step) * step;
    long end = Math.max(ceil(until, step) * step, start + step);
    ObjectNode request = JsonNodeFactory.instance.objectNode();
    request.set("reservation", Requests.submission(id, plan.getQueueName(), contract));
    request.set("free", Profile.runs(plan.getAvailableResourceOverTime(user, id, start, end, 0), start, end, step,
        false));
    request.put("step", step);
    request.put("now", Math.max(now, start));
    Resource total = plan.getTotalCapacity();
    ObjectNode capacity = request.putObject("capacity");
    capacity.put("memory", total.getMemorySize());
    capacity.put("vcores", total.getVirtualCores());
    request.put("agent", settings.agent);
    Limits limits = Limits.of(plan);
    if (limits != null) {  // the user's limits and its use over a window before and after the profile
      request.set("limits", limits.json());
      long around = ceil(limits.windowMs, step) * step;
      request.set("user_use", Profile.runs(plan.getConsumptionForUserOverTime(user, start - around, end + around),
          start - around, end + around, step, true));
    }
    return request;
  }

  private static long ceil(long value, long by) {
    return Math.floorDiv(value + by - 1, by);
  }

  /** Our answer as YARN's allocation; a rejection as a PlanningException with our reason. */
  private ReservationAllocation allocation(ReservationId id, String user, Plan plan,
      ReservationDefinition contract, JsonNode answer) throws PlanningException {
    if (!answer.path("accepted").asBoolean(false)) {
      throw new PlanningException(rejection(id, answer.path("reason")));
    }
    Map<ReservationInterval, Resource> intervals = new HashMap<>();
    long first = Long.MAX_VALUE;
    long last = Long.MIN_VALUE;
    for (JsonNode item : answer.path("allocations")) {
      long start = item.path("start_ms").asLong();
      long end = item.path("end_ms").asLong();
      JsonNode resources = item.path("resources");
      Resource held = Resource.newInstance(resources.path("memory").asLong(), resources.path("vcores").asInt());
      intervals.merge(new ReservationInterval(start, end), held, (a, b) -> Resource.newInstance(
          a.getMemorySize() + b.getMemorySize(), a.getVirtualCores() + b.getVirtualCores()));
      first = Math.min(first, start);
      last = Math.max(last, end);
    }
    if (intervals.isEmpty()) {
      throw new PlanningException("rayon accepted " + id + " with no allocation: nothing to reserve");
    }
    return new InMemoryReservationAllocation(id, contract, user, plan.getQueueName(), first, last, intervals,
        plan.getResourceCalculator(), plan.getMinimumAllocation());
  }

  private String rejection(ReservationId id, JsonNode reason) {
    StringBuilder text = new StringBuilder("rayon (").append(settings.agent).append(") rejected ").append(id)
        .append(": ").append(reason.path("code").asText("capacity"));
    if (reason.has("atom")) {
      text.append(" (").append(reason.get("atom").asText()).append(")");
    }
    text.append(": ").append(reason.path("message").asText("no placement found"));
    if (reason.has("earliest_deadline_ms")) {
      text.append("; it would fit with a deadline of ").append(reason.path("earliest_deadline").asText())
          .append(" (").append(reason.get("earliest_deadline_ms").asLong()).append(" ms)");
    }
    return text.toString();
  }
}
