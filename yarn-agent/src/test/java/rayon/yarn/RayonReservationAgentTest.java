package rayon.yarn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.ReservationDefinition;
import org.apache.hadoop.yarn.api.records.ReservationId;
import org.apache.hadoop.yarn.api.records.ReservationRequest;
import org.apache.hadoop.yarn.api.records.ReservationRequestInterpreter;
import org.apache.hadoop.yarn.api.records.ReservationRequests;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.RMContextImpl;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.CapacityOverTimePolicy;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.InMemoryPlan;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.InMemoryReservationAllocation;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.NoOverCommitPolicy;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationAllocation;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationInterval;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.SharingPolicy;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.PlanningException;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacitySchedulerConfiguration;
import org.apache.hadoop.yarn.util.resource.DominantResourceCalculator;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The agent's own decisions on YARN's InMemoryPlan (NoOverCommitPolicy, or CapacityOverTimePolicy), with the
 * service's answers scripted by a loopback HTTP server: the retry when the plan changed between its read and its
 * write (either policy), a rejection's text, the user's limits and use it sends, and the fallback when the service
 * is unreachable. The real service and the real RM: tests/peers/yarn/test_rm_agent.py.
 */
public class RayonReservationAgentTest {
  static final long MINUTE = 60_000;
  static final long T = (System.currentTimeMillis() / 3_600_000 + 2) * 3_600_000;
  static final Resource ALL = Resource.newInstance(8192, 8);
  static final ObjectMapper JSON = new ObjectMapper();

  private HttpServer server;
  private final List<JsonNode> requests = Collections.synchronizedList(new ArrayList<>());
  private BiFunction<Integer, JsonNode, String> answers;
  private InMemoryPlan plan;

  @Before
  public void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/v1/placement", exchange -> {
      JsonNode request = JSON.readTree(exchange.getRequestBody());
      requests.add(request);
      byte[] body = answers.apply(requests.size(), request).getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
    plan = planWith(new NoOverCommitPolicy());
  }

  static InMemoryPlan planWith(SharingPolicy policy) {
    return new InMemoryPlan(null, policy, null, ALL, 1000, new DominantResourceCalculator(),
        Resource.newInstance(1024, 1), ALL, "dedicated", null, true, new RMContextImpl());
  }

  /** YARN's CapacityOverTimePolicy (the CapacityScheduler's default) with these shares in percent and window. */
  static SharingPolicy overTime(float instantaneous, float average, long windowMs) {
    CapacitySchedulerConfiguration conf = new CapacitySchedulerConfiguration(new Configuration(false), false);
    String queue = "yarn.scheduler.capacity.root.dedicated.";
    conf.setFloat(queue + "instantaneous-max-capacity", instantaneous);
    conf.setFloat(queue + "average-capacity", average);
    conf.setLong(queue + "reservation-window", windowMs);
    CapacityOverTimePolicy policy = new CapacityOverTimePolicy();
    policy.init("root.dedicated", conf);
    return policy;
  }

  @After
  public void stop() {
    server.stop(0);
  }

  RayonReservationAgent agent(String url, String fallback) {
    Configuration conf = new Configuration(false);
    conf.set(Settings.URL, url);
    conf.set(Settings.FALLBACK, fallback);
    conf.setInt(Settings.RETRIES, 2);
    RayonReservationAgent agent = new RayonReservationAgent();
    agent.init(conf);
    return agent;
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  static ReservationDefinition gangOfEight() {
    ReservationRequest request = ReservationRequest.newInstance(Resource.newInstance(1024, 1), 8, 8, 10 * MINUTE);
    return ReservationDefinition.newInstance(T, T + 60 * MINUTE,
        ReservationRequests.newInstance(List.of(request), ReservationRequestInterpreter.R_ALL), "job", "0",
        Priority.newInstance(0));
  }

  static String accepted(long start) {
    return "{\"reservation\": \"job\", \"accepted\": true, \"allocations\": [{\"atom\": \"stage0\", \"start_ms\": "
        + start + ", \"end_ms\": " + (start + 10 * MINUTE) + ", \"bundles\": 8, \"resources\": {\"memory\": 8192, "
        + "\"vcores\": 8}}]}";
  }

  /** Another decision takes [T, T+10m) whole, as if written between the agent's read and its write. */
  void competitor() {
    held("bob", 99, ALL);
  }

  /** A reservation of `user` holding `resource` over [T, T+10m). */
  void held(String user, int number, Resource resource) {
    try {
      ReservationId other = ReservationId.newInstance(1, number);
      plan.addReservation(new InMemoryReservationAllocation(other, null, user, "dedicated", T, T + 10 * MINUTE,
          Map.of(new ReservationInterval(T, T + 10 * MINUTE), resource), new DominantResourceCalculator(),
          Resource.newInstance(1024, 1)), false);
    } catch (PlanningException e) {
      throw new IllegalStateException(e);
    }
  }

  static long freeVcoresAt(JsonNode request, long time) {
    return vcoresAt(request.get("free"), time);
  }

  static long vcoresAt(JsonNode runs, long time) {
    for (JsonNode run : runs) {
      if (run.get("start").asLong() <= time && time < run.get("end").asLong()) {
        return run.get("resources").get("vcores").asLong();
      }
    }
    return -1;
  }

  @Test
  public void placesAgainOnWhatIsFreeNowWhenThePlanChangedUnderIt() throws Exception {
    answers = (count, request) -> {
      if (count == 1) {
        competitor();
        return accepted(T);  // placed on what was free when the agent read the plan: now taken
      }
      return accepted(T + 10 * MINUTE);
    };
    ReservationId id = ReservationId.newInstance(1, 1);
    assertTrue(agent(url(), Settings.NO_FALLBACK).createReservation(id, "alice", plan, gangOfEight()));
    assertEquals(2, requests.size());
    assertEquals(8, freeVcoresAt(requests.get(0), T));
    assertEquals(0, freeVcoresAt(requests.get(1), T));  // the second placement saw the competitor
    ReservationAllocation held = plan.getReservationById(id);
    assertEquals(T + 10 * MINUTE, held.getStartTime());
    assertEquals(T + 20 * MINUTE, held.getEndTime());
  }

  @Test
  public void placesAgainWhenCapacityOverTimePolicyWrapsTheOverCommit() throws Exception {
    plan = planWith(overTime(100, 100, 24 * 60 * MINUTE));
    answers = (count, request) -> {
      if (count == 1) {
        competitor();
        return accepted(T);
      }
      return accepted(T + 10 * MINUTE);
    };
    ReservationId id = ReservationId.newInstance(1, 7);
    assertTrue(agent(url(), Settings.NO_FALLBACK).createReservation(id, "alice", plan, gangOfEight()));
    assertEquals(2, requests.size());
    assertEquals(T + 10 * MINUTE, plan.getReservationById(id).getStartTime());
    assertNull(requests.get(0).get("limits"));  // an average of the whole plan cannot bind: nothing to send
  }

  @Test
  public void underCapacityOverTimePolicyTheRequestCarriesTheUsersLimitsAndItsUse() throws Exception {
    plan = planWith(overTime(100, 50, 60 * MINUTE));
    held("alice", 98, Resource.newInstance(4096, 4));
    answers = (count, request) -> accepted(T + 30 * MINUTE);
    assertTrue(agent(url(), Settings.NO_FALLBACK).createReservation(ReservationId.newInstance(1, 8), "alice",
        plan, gangOfEight()));
    JsonNode request = requests.get(0);
    JsonNode limits = request.get("limits");
    assertEquals(1.0, limits.get("instantaneous").asDouble(), 1e-6);
    assertEquals(0.5, limits.get("average").asDouble(), 1e-6);
    assertEquals(60 * MINUTE, limits.get("window").asLong());
    JsonNode use = request.get("user_use");
    long start = request.get("free").get(0).get("start").asLong();
    assertEquals(start - 60 * MINUTE, use.get(0).get("start").asLong());
    assertEquals(T + 180 * MINUTE, use.get(use.size() - 1).get("end").asLong());
    assertEquals(4, vcoresAt(use, T + 5 * MINUTE));
    assertEquals(0, vcoresAt(use, T + 30 * MINUTE));
    assertEquals(4, freeVcoresAt(request, T + 5 * MINUTE));
  }

  @Test
  public void givesUpAfterItsRetriesSayingWhy() throws Exception {
    answers = (count, request) -> {
      if (count == 1) {
        competitor();
      }
      return accepted(T);
    };
    ReservationId id = ReservationId.newInstance(1, 2);
    try {
      agent(url(), Settings.NO_FALLBACK).createReservation(id, "alice", plan, gangOfEight());
      fail("an answer that never fits must not be accepted");
    } catch (PlanningException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("placed " + id + " 3 times"));
    }
    assertEquals(3, requests.size());
    assertNull(plan.getReservationById(id));
  }

  @Test
  public void aRejectionCarriesOurReasonAndTheEarliestDeadline() throws Exception {
    answers = (count, request) -> "{\"reservation\": \"job\", \"accepted\": false, \"reason\": {\"code\": "
        + "\"capacity\", \"atom\": \"stage0\", \"message\": \"needs 8 bundles at once; at most 4 are free\", "
        + "\"earliest_deadline\": \"2026-11-28T01:10:00Z\", \"earliest_deadline_ms\": 1795396200000}}";
    ReservationId id = ReservationId.newInstance(1, 3);
    try {
      agent(url(), Settings.NO_FALLBACK).createReservation(id, "alice", plan, gangOfEight());
      fail("a rejection must surface as a PlanningException");
    } catch (PlanningException e) {
      assertEquals("rayon (gree-l) rejected " + id + ": capacity (stage0): needs 8 bundles at once; at most 4 are "
          + "free; it would fit with a deadline of 2026-11-28T01:10:00Z (1795396200000 ms)", e.getMessage());
    }
    assertNull(plan.getReservationById(id));
  }

  @Test
  public void theRequestCarriesYarnsDefinitionAndItsFreeProfile() throws Exception {
    competitor();
    answers = (count, request) -> accepted(T + 30 * MINUTE);
    assertTrue(agent(url(), Settings.NO_FALLBACK).createReservation(ReservationId.newInstance(1, 4), "alice",
        plan, gangOfEight()));
    JsonNode request = requests.get(0);
    JsonNode definition = request.get("reservation").get("reservation-definition");
    assertEquals(T, definition.get("arrival").asLong());
    assertEquals(8, definition.get("reservation-requests").get("reservation-request").get(0)
        .get("min-concurrency").asInt());
    assertEquals(1000, request.get("step").asLong());
    assertEquals(0, freeVcoresAt(request, T + 5 * MINUTE));
    assertEquals(8, freeVcoresAt(request, T + 10 * MINUTE));
    assertEquals(T + 120 * MINUTE, request.get("free").get(request.get("free").size() - 1).get("end").asLong());
  }

  @Test
  public void yarnsFallbackDecidesWhenTheServiceIsUnreachable() throws Exception {
    String closed = url();
    server.stop(0);
    ReservationId id = ReservationId.newInstance(1, 5);
    RayonReservationAgent agent = agent(closed, Settings.ALIGNED);
    assertTrue(agent.createReservation(id, "alice", plan, gangOfEight()));
    assertFalse(plan.getReservationById(id).getAllocationRequests().isEmpty());
    assertTrue(requests.isEmpty());
  }

  @Test
  public void withoutAFallbackAnUnreachableServiceIsARejection() throws Exception {
    String closed = url();
    server.stop(0);
    try {
      agent(closed, Settings.NO_FALLBACK).createReservation(ReservationId.newInstance(1, 6), "alice", plan,
          gangOfEight());
      fail("no fallback: the reservation must be rejected");
    } catch (PlanningException e) {
      assertTrue(e.getMessage(), e.getMessage().startsWith("rayon is unreachable"));
    }
  }
}
