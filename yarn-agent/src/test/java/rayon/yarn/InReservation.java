package rayon.yarn;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.ReservationId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.ClientRMProxy;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttempt;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttemptState;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.event.NodeUpdateSchedulerEvent;

/**
 * A small application of ours run inside a reservation: an unmanaged ApplicationMaster (in this JVM) submitted with
 * the reservation's id to the reservable queue; the scheduler adds it to the reservation's own queue (made by YARN's
 * PlanFollower), it registers there, asks for one container for a while and finishes. The one node has no
 * NodeManager (in one JVM its web app would take over the RM's): its heartbeats are sent to the scheduler from
 * here. Whether the container comes is reported, not required: with this heartbeat-less node the CapacityScheduler
 * allocated none inside a reservation's queue, whichever agent (ours or YARN's own) made the reservation.
 */
final class InReservation {
  static final long WAIT_MS = 120_000;
  static final long ASK_MS = 15_000;  // how long the master asks for its container

  private InReservation() {
  }

  static ObjectNode run(ResourceManager rm, Configuration conf, YarnClient yarn, NodeId node, String queue,
      ReservationId reservation, Resource container) throws Exception {
    // The PlanFollower makes the reservation's queue, and gives it capacity once the reservation holds some: an
    // application added to the queue before then is not started when the capacity comes.
    CapacityScheduler scheduler = (CapacityScheduler) rm.getResourceScheduler();
    waitFor(() -> scheduler.getQueue(reservation.toString()) != null
        && scheduler.getQueue(reservation.toString()).getCapacity() > 0, "capacity in the reservation's queue");
    YarnClientApplication app = yarn.createApplication();
    ApplicationSubmissionContext context = app.getApplicationSubmissionContext();
    ApplicationId id = context.getApplicationId();
    context.setApplicationName("rayon-in-reservation");
    context.setQueue("root." + queue);  // 3.4 matches the reservation's parent by its path, not its short name
    context.setReservationID(reservation);
    context.setUnmanagedAM(true);
    context.setResource(Resource.newInstance(1024, 1));
    context.setAMContainerSpec(ContainerLaunchContext.newInstance(Collections.emptyMap(), Collections.emptyMap(),
        Collections.emptyList(), Collections.emptyMap(), null, Collections.emptyMap()));
    yarn.submitApplication(context);
    RMApp rmApp = rm.getRMContext().getRMApps().get(id);
    waitFor(() -> rmApp.getCurrentAppAttempt() != null
        && rmApp.getCurrentAppAttempt().getAppAttemptState() == RMAppAttemptState.LAUNCHED, "the attempt of " + id);
    RMAppAttempt attempt = rmApp.getCurrentAppAttempt();
    Token<AMRMTokenIdentifier> token = attempt.getAMRMToken();
    token.setService(ClientRMProxy.getAMRMTokenService(conf));
    UserGroupInformation ugi = UserGroupInformation.createRemoteUser(attempt.getAppAttemptId().toString());
    ugi.addToken(token);
    String[] ranIn = new String[3];
    List<Container> given = ugi.doAs((PrivilegedExceptionAction<List<Container>>) () ->
        master(rm, conf, node, container, id, ranIn));
    waitFor(() -> yarn.getApplicationReport(id).getYarnApplicationState() == YarnApplicationState.FINISHED,
        id + " finishing");
    ApplicationReport report = yarn.getApplicationReport(id);
    ObjectNode answer = JsonNodeFactory.instance.objectNode();
    answer.put("application", id.toString());
    answer.put("submitted_to", report.getQueue());
    answer.put("ran_in", ranIn[0]);
    answer.put("registered_in", ranIn[1]);
    answer.put("waited_ms", Long.parseLong(ranIn[2]));
    answer.put("state", report.getYarnApplicationState().toString());
    answer.put("final_status", report.getFinalApplicationStatus().toString());
    answer.put("containers", given.size());
    if (!given.isEmpty()) {
      answer.put("container_memory", given.get(0).getResource().getMemorySize());
      answer.put("container_vcores", given.get(0).getResource().getVirtualCores());
    }
    return answer;
  }

  /** The ApplicationMaster's life: register, ask for one container (up to ASK_MS), release it, finish. */
  private static List<Container> master(ResourceManager rm, Configuration conf, NodeId node, Resource container,
      ApplicationId id, String[] ranIn) throws Exception {
    AMRMClient<ContainerRequest> am = AMRMClient.createAMRMClient();
    am.init(conf);
    am.start();
    List<Container> given = new ArrayList<>();
    try {
      am.registerApplicationMaster("localhost", 0, "");
      ranIn[1] = ((CapacityScheduler) rm.getResourceScheduler()).getSchedulerApplications().get(id).getQueue()
          .getQueueName();
      long asked = System.currentTimeMillis();
      am.addContainerRequest(new ContainerRequest(container, null, null, Priority.newInstance(1)));
      long until = System.currentTimeMillis() + ASK_MS;
      while (given.isEmpty() && System.currentTimeMillis() < until) {
        given.addAll(am.allocate(0.5f).getAllocatedContainers());
        RMNode rmNode = rm.getRMContext().getRMNodes().get(node);
        rm.getResourceScheduler().handle(new NodeUpdateSchedulerEvent(rmNode));
        Thread.sleep(200);
      }
      ranIn[2] = String.valueOf(System.currentTimeMillis() - asked);
      // the scheduler's queue of the running application: the reservation's own queue
      ranIn[0] = ((CapacityScheduler) rm.getResourceScheduler()).getSchedulerApplications().get(id).getQueue()
          .getQueueName();
      for (Container c : given) {
        am.releaseAssignedContainer(c.getId());
      }
      am.unregisterApplicationMaster(FinalApplicationStatus.SUCCEEDED, "ran inside its reservation", "");
    } finally {
      am.stop();
    }
    return given;
  }

  interface Condition {
    boolean holds() throws Exception;
  }

  static void waitFor(Condition condition, String what) throws Exception {
    long until = System.currentTimeMillis() + WAIT_MS;
    while (!condition.holds()) {
      if (System.currentTimeMillis() > until) {
        throw new IllegalStateException(what + " did not come within " + WAIT_MS / 1000 + " s");
      }
      Thread.sleep(100);
    }
  }
}
