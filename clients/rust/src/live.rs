//! The live resources: subscriptions, flow fields and live plans, with their event
//! streams.

use reqwest::{Method, RequestBuilder, Response};
use serde_json::json;

use crate::error::error_of;
use crate::{
    Auth, Client, Error, EventStream, FlowField, FlowFieldEvent, LivePlanEvent, PathRequest,
    PlanProgress, PlanRequest, PlanResult, Point, Subscription, SubscriptionEvent,
};

impl Client {
    /// `POST /v1/maps/{name}/subscriptions`; keep the `secret`.
    pub async fn create_subscription(
        &self,
        name: &str,
        q: &PathRequest,
    ) -> Result<Subscription, Error> {
        let path = format!("/v1/maps/{name}/subscriptions");
        self.json(|| self.request(Method::POST, &path, Auth::Query).json(q))
            .await
    }

    /// `GET /v1/subscriptions/{id}`.
    pub async fn get_subscription(&self, id: &str) -> Result<Subscription, Error> {
        let path = format!("/v1/subscriptions/{id}");
        self.json(|| self.request(Method::GET, &path, Auth::Query))
            .await
    }

    fn with_secret(
        &self,
        method: Method,
        path: &str,
        header: &str,
        secret: Option<&str>,
    ) -> RequestBuilder {
        match secret {
            Some(s) => self.request(method, path, Auth::Query).header(header, s),
            None => self.request(method, path, Auth::Admin),
        }
    }

    /// `PATCH /v1/subscriptions/{id}`: the agent moved (`None`: the admin token).
    pub async fn move_subscription(
        &self,
        id: &str,
        secret: Option<&str>,
        position: Point,
    ) -> Result<Subscription, Error> {
        let path = format!("/v1/subscriptions/{id}");
        let body = json!({ "position": position });
        self.json(|| {
            self.with_secret(Method::PATCH, &path, "x-subscription-secret", secret)
                .json(&body)
        })
        .await
    }

    /// `DELETE /v1/subscriptions/{id}` (the secret, or `None`: the admin token).
    pub async fn delete_subscription(&self, id: &str, secret: Option<&str>) -> Result<(), Error> {
        let path = format!("/v1/subscriptions/{id}");
        self.send(|| self.with_secret(Method::DELETE, &path, "x-subscription-secret", secret))
            .await?;
        Ok(())
    }

    /// `GET /v1/subscriptions/{id}/events`, resumed with `Last-Event-ID`.
    pub fn subscription_events(
        &self,
        id: &str,
        last_event_id: Option<u64>,
    ) -> EventStream<SubscriptionEvent> {
        EventStream::new(
            self.clone(),
            format!("/v1/subscriptions/{id}/events"),
            last_event_id,
        )
    }

    /// `POST /v1/maps/{name}/flowfields`; keep the `secret`.
    pub async fn create_flow_field(
        &self,
        name: &str,
        req: &serde_json::Value,
    ) -> Result<FlowField, Error> {
        let path = format!("/v1/maps/{name}/flowfields");
        self.json(|| self.request(Method::POST, &path, Auth::Query).json(req))
            .await
    }

    /// `GET /v1/flowfields/{id}`.
    pub async fn get_flow_field(&self, id: &str) -> Result<FlowField, Error> {
        let path = format!("/v1/flowfields/{id}");
        self.json(|| self.request(Method::GET, &path, Auth::Query))
            .await
    }

    /// `DELETE /v1/flowfields/{id}` (the secret, or `None`: the admin token).
    pub async fn delete_flow_field(&self, id: &str, secret: Option<&str>) -> Result<(), Error> {
        let path = format!("/v1/flowfields/{id}");
        self.send(|| self.with_secret(Method::DELETE, &path, "x-flowfield-secret", secret))
            .await?;
        Ok(())
    }

    /// `GET /v1/flowfields/{id}/events`, resumed with `Last-Event-ID`; on `resync`,
    /// fetch the field again.
    pub fn flow_field_events(
        &self,
        id: &str,
        last_event_id: Option<u64>,
    ) -> EventStream<FlowFieldEvent> {
        EventStream::new(
            self.clone(),
            format!("/v1/flowfields/{id}/events"),
            last_event_id,
        )
    }

    /// `POST /v1/maps/{name}/plans`: one plan for many agents; with `subscribe` set (see
    /// [`Self::create_live_plan`]) a live plan.
    pub async fn plan_agents(&self, name: &str, req: &PlanRequest) -> Result<PlanResult, Error> {
        let path = format!("/v1/maps/{name}/plans");
        self.json(|| self.request(Method::POST, &path, Auth::Query).json(req))
            .await
    }

    /// `POST /v1/maps/{name}/plans` with `subscribe`: a live plan; keep the `secret`.
    pub async fn create_live_plan(
        &self,
        name: &str,
        req: &PlanRequest,
    ) -> Result<PlanResult, Error> {
        let req = PlanRequest {
            subscribe: Some(true),
            ..req.clone()
        };
        self.plan_agents(name, &req).await
    }

    /// `GET /v1/plans/{id}`.
    pub async fn get_plan(&self, id: &str) -> Result<PlanResult, Error> {
        let path = format!("/v1/plans/{id}");
        self.json(|| self.request(Method::GET, &path, Auth::Query))
            .await
    }

    /// `PATCH /v1/plans/{id}`: the agents' progress (`None`: the admin token).
    pub async fn report_plan_progress(
        &self,
        id: &str,
        secret: Option<&str>,
        progress: &PlanProgress,
    ) -> Result<PlanResult, Error> {
        let path = format!("/v1/plans/{id}");
        self.json(|| {
            self.with_secret(Method::PATCH, &path, "x-plan-secret", secret)
                .json(progress)
        })
        .await
    }

    /// `DELETE /v1/plans/{id}` (the secret, or `None`: the admin token).
    pub async fn delete_plan(&self, id: &str, secret: Option<&str>) -> Result<(), Error> {
        let path = format!("/v1/plans/{id}");
        self.send(|| self.with_secret(Method::DELETE, &path, "x-plan-secret", secret))
            .await?;
        Ok(())
    }

    /// `GET /v1/plans/{id}/events`: every new plan, resumed with `Last-Event-ID`.
    pub fn plan_events(&self, id: &str, last_event_id: Option<u64>) -> EventStream<LivePlanEvent> {
        EventStream::new(
            self.clone(),
            format!("/v1/plans/{id}/events"),
            last_event_id,
        )
    }

    /// Opens a stream once: the timeout bounds the headers only.
    pub(crate) async fn open_stream(
        &self,
        path: &str,
        last: Option<u64>,
    ) -> Result<Response, Error> {
        let mut b = self
            .request(Method::GET, path, Auth::Query)
            .header("accept", "text/event-stream");
        if let Some(l) = last {
            b = b.header("last-event-id", l.to_string());
        }
        let resp = tokio::time::timeout(self.timeout, b.send())
            .await
            .map_err(|_| Error::Timeout)??;
        if resp.status().is_success() {
            Ok(resp)
        } else {
            Err(error_of(resp).await)
        }
    }
}
